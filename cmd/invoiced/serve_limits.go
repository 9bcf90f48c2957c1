package main

import (
	"flag"
	"net"
	"syscall"
	"time"

	"github.com/invoiced/invoiced/api"
	"golang.org/x/net/netutil"
)

// limits are serve's defences against hostile and slow clients
// (docs/threat-model.md has the table of limits and defaults).
type limits struct {
	maxConnections      int
	idleTimeout         time.Duration
	maxExports          int
	maxExportsPerSeller int
	exportStall         time.Duration
	failureRate         float64
	rateLimit           float64
}

// Defaults of the limits that are not the api package's.
const (
	defaultIdleTimeout = 30 * time.Second
	// fdReserve is the file descriptors kept back from --max-connections
	// besides the database pool and export spools: the listener, the
	// debug listener, log files, the resolver.
	fdReserve = 64
)

// addLimitFlags registers the limit flags on fs, writing to l.
func addLimitFlags(fs *flag.FlagSet, l *limits) {
	fs.IntVar(&l.maxConnections, "max-connections", 0, "most client connections open at once; more wait in the listen queue (0: the open-file limit less the database pool, export spools and a reserve)")
	fs.DurationVar(&l.idleTimeout, "idle-timeout", defaultIdleTimeout, "how long an idle keep-alive connection is kept open")
	fs.IntVar(&l.maxExports, "max-exports", 0, "audit exports in progress at once over all sellers, 429 too_many_exports past it (0: 4, or a quarter of --max-conns when that is less, at least 1)")
	fs.IntVar(&l.maxExportsPerSeller, "max-exports-per-seller", api.DefaultMaxExportsPerSeller, "audit exports in progress at once for one seller (at most --max-exports)")
	fs.DurationVar(&l.exportStall, "export-stall-timeout", api.DefaultExportStallTimeout, "how long a client may stop reading an export before it is cut off")
	fs.Float64Var(&l.rateLimit, "rate-limit", 0, "requests per second one API key may make (a second's worth at once), each invoice of a batch or device upload counting as one; 429 rate_limited with Retry-After past it, and for a request carrying more invoices than a second's worth; 0 = no limit")
	fs.Float64Var(&l.failureRate, "failure-rate", api.DefaultFailureRate, "authentication failures and unknown receipt ids one client address may cause per second (ten seconds' worth at once) before its uncached lookups get 429; 0 = no limit (behind a proxy every client shares its address)")
}

// resolve fills in the automatic values for a pool of poolConns
// connections and returns a usage error for limits that cannot work.
// Exports hold a pooled connection only while they are written to their
// spool, but never more than a quarter of the pool by default.
func (l *limits) resolve(poolConns int) error {
	if l.maxExports == 0 {
		l.maxExports = max(1, min(api.DefaultMaxExports, poolConns/4))
	}
	switch {
	case l.maxConnections < 0:
		return usageErrorf("serve: --max-connections must be 0 (sized from the open-file limit) or more")
	case l.idleTimeout <= 0:
		return usageErrorf("serve: --idle-timeout must be positive")
	case l.maxExports < 1 || l.maxExports > poolConns:
		return usageErrorf("serve: --max-exports must be from 1 to --max-conns")
	case l.maxExportsPerSeller < 1:
		return usageErrorf("serve: --max-exports-per-seller must be at least 1")
	case l.exportStall <= 0:
		return usageErrorf("serve: --export-stall-timeout must be positive")
	case l.failureRate < 0:
		return usageErrorf("serve: --failure-rate must be 0 (no limit) or more")
	case l.rateLimit < 0:
		return usageErrorf("serve: --rate-limit must be 0 (no limit) or more")
	}
	l.maxExportsPerSeller = min(l.maxExportsPerSeller, l.maxExports)
	return nil
}

// connectionLimit returns --max-connections, or when it is 0 the open-file
// limit (which the Go runtime raises to the hard limit at start) less the
// descriptors the pool, the export spools and fdReserve need; at least 16.
func (l limits) connectionLimit(poolConns int) int {
	if l.maxConnections > 0 {
		return l.maxConnections
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		rl.Cur = 1 << 16
	}
	return max(16, int(rl.Cur)-poolConns-l.maxExports-fdReserve)
}

// limitListener returns ln accepting at most n connections at once: past
// n, Accept waits for one to close and new clients wait in the kernel's
// listen queue, instead of the process running out of file descriptors.
func limitListener(ln net.Listener, n int) net.Listener { return netutil.LimitListener(ln, n) }

// apiLimits copies the limits the api package enforces into cfg.
func (l limits) apiLimits(cfg *api.Config) {
	cfg.MaxExports, cfg.MaxExportsPerSeller, cfg.ExportStallTimeout = l.maxExports, l.maxExportsPerSeller, l.exportStall
	cfg.FailureRate = l.failureRate
	cfg.KeyRate = l.rateLimit
	if l.failureRate == 0 {
		cfg.FailureRate = -1 // the flag's 0 is "no limit", Config's is "default"
	}
}
