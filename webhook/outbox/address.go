package outbox

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// This file holds which addresses a delivery may connect to (SSRF).

// errPrivateAddress is a connection refused by publicOnly.
var errPrivateAddress = errors.New("webhook: the receiver's address is loopback, private or link-local")

// publicOnly is the dialer's Control: it refuses to connect to an address
// that is not public (PublicAddr), whatever name resolved to it.
func publicOnly(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !PublicAddr(ap.Addr()) {
		return fmt.Errorf("%w: %s", errPrivateAddress, address)
	}
	return nil
}

// PublicAddr reports whether a may be called by webhook deliveries: an
// address outside every range of IANA's IPv4 and IPv6 special-purpose
// address registries that is not globally reachable (blockedV4,
// blockedV6, with the globally reachable ranges inside them in
// reachableInside). IPv6 is public only inside 2000::/3 (the rest is
// reserved, unique-local, link-local, site-local, multicast or an
// IPv4-compatible form) or as NAT64 64:ff9b::/96; the forms that carry an
// IPv4 address (mapped ::ffff:0:0/96, NAT64, 6to4 2002::/16) are judged by
// the address they carry. Test: TestPublicAddr, case by case.
func PublicAddr(a netip.Addr) bool {
	a = a.WithZone("")
	if !a.IsValid() {
		return false
	}
	if a.Is4In6() {
		a = a.Unmap()
	}
	if a.Is4() {
		return !inAny(a, blockedV4) || inAny(a, reachableInside)
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return PublicAddr(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(a):
		return PublicAddr(netip.AddrFrom4([4]byte(b[2:6])))
	case !globalUnicast.Contains(a):
		return false
	}
	return !inAny(a, blockedV6) || inAny(a, reachableInside)
}

// inAny reports whether a lies in one of prefixes.
func inAny(a netip.Addr, prefixes []netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// The ranges publicAddr judges by, from IANA's special-purpose address
// registries (iana-ipv4-special-registry, iana-ipv6-special-registry).
var (
	nat64         = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052: the last 32 bits are an IPv4 address
	sixToFour     = netip.MustParsePrefix("2002::/16")    // RFC 3056: bits 16–47 are an IPv4 address
	globalUnicast = netip.MustParsePrefix("2000::/3")
	blockedV4     = prefixes(
		"0.0.0.0/8",       // "this network"
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // shared address space (CGNAT)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments (dummy, NAT64 discovery, …)
		"192.0.2.0/24",    // documentation TEST-NET-1
		"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation TEST-NET-2
		"203.0.113.0/24",  // documentation TEST-NET-3
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, and 255.255.255.255 limited broadcast
	)
	blockedV6 = prefixes(
		"2001::/23",     // IETF protocol assignments: Teredo, benchmarking, ORCHID, …
		"2001:db8::/32", // documentation
		"3fff::/20",     // documentation
	)
	// reachableInside are the ranges the registries mark globally
	// reachable inside a blocked one.
	reachableInside = prefixes(
		"192.0.0.9/32", "192.0.0.10/32", // PCP and TURN anycast
		"2001:1::1/128", "2001:1::2/128", // PCP and TURN anycast
		"2001:3::/32",     // AMT
		"2001:4:112::/48", // AS112-v6
		"2001:20::/28",    // ORCHIDv2
		"2001:30::/28",    // DRIP
	)
)

// prefixes parses ps, which must be valid.
func prefixes(ps ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ps))
	for i, p := range ps {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}
