package outbox

import (
	"net/netip"
	"testing"
)

// TestPublicAddr: the block-list holds every range of IANA's IPv4 and
// IPv6 special-purpose address registries that is not globally
// reachable, and the IPv6 forms that embed an IPv4 address (mapped,
// compatible, NAT64, 6to4, Teredo) are judged by the address they embed.
func TestPublicAddr(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr   string
		public bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"2606:4700:4700::1111", true},
		{"2001:4860:4860::8888", true},
		{"192.0.0.9", true},  // Port Control Protocol anycast: globally reachable
		{"192.0.0.10", true}, // TURN anycast
		{"2001:1::1", true},  // PCP anycast
		{"2001:1::2", true},  // TURN anycast
		{"2001:3::1", true},  // AMT
		{"2001:4:112::1", true},
		{"2001:20::1", true},       // ORCHIDv2
		{"2001:30::1", true},       // DRIP
		{"64:ff9b::808:808", true}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", true},  // 6to4 of 8.8.8.8
		{"::ffff:8.8.8.8", true},   // IPv4-mapped: judged by the IPv4 address it carries

		{"0.0.0.0", false},
		{"0.1.2.3", false}, // "this network", 0.0.0.0/8
		{"10.1.2.3", false},
		{"100.64.0.1", false},
		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"169.254.169.254", false},
		{"172.16.0.1", false},
		{"192.0.0.1", false},   // IETF protocol assignments
		{"192.0.0.8", false},   // IPv4 dummy address
		{"192.0.0.170", false}, // NAT64/DNS64 discovery
		{"192.0.2.1", false},   // TEST-NET-1
		{"192.31.196.1", true}, // AS112-v4: globally reachable
		{"192.52.193.1", true}, // AMT
		{"192.88.99.1", false}, // deprecated 6to4 relay anycast
		{"192.168.1.1", false},
		{"192.175.48.1", true}, // direct delegation AS112
		{"198.18.0.1", false},  // benchmarking
		{"198.19.255.255", false},
		{"198.51.100.1", false}, // TEST-NET-2
		{"203.0.113.1", false},  // TEST-NET-3
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"240.0.0.1", false}, // reserved
		{"255.255.255.255", false},
		{"::", false},
		{"::1", false},
		{"::ffff:127.0.0.1", false}, // IPv4-mapped
		{"::ffff:10.0.0.1", false},
		{"::127.0.0.1", false},        // IPv4-compatible (deprecated)
		{"::8.8.8.8", false},          // IPv4-compatible, deprecated as a whole
		{"::ffff:0:127.0.0.1", false}, // IPv4-translated
		{"64:ff9b::7f00:1", false},    // NAT64 of 127.0.0.1
		{"64:ff9b::a00:1", false},     // NAT64 of 10.0.0.1
		{"64:ff9b:1::1", false},       // local-use NAT64
		{"100::1", false},             // discard-only
		{"100:0:0:1::1", false},       // dummy IPv6 prefix
		{"2001::1", false},            // Teredo
		{"2001:2::1", false},          // benchmarking
		{"2001:10::1", false},         // ORCHID (deprecated)
		{"2001:db8::1", false},        // documentation
		{"3fff::1", false},            // documentation
		{"2002:7f00:1::1", false},     // 6to4 of 127.0.0.1
		{"2002:a00:1::1", false},      // 6to4 of 10.0.0.1
		{"2002:c0a8:101::1", false},   // 6to4 of 192.168.1.1
		{"5f00::1", false},            // segment routing SIDs
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"fe80::1", false},
		{"fec0::1", false}, // site-local (deprecated)
		{"ff02::1", false},
		{"ff0e::1", false},
	} {
		if got := PublicAddr(netip.MustParseAddr(c.addr)); got != c.public {
			t.Errorf("PublicAddr(%s) = %v, want %v", c.addr, got, c.public)
		}
	}
}
