package main

import (
	"flag"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/invoiced/invoiced/api"
	"golang.org/x/net/netutil"
)

// limits are serve's defences against hostile and slow clients
// (docs/threat-model.md has the table of limits and defaults).
type limits struct {
	maxConnections        int
	idleTimeout           time.Duration
	maxExports            int
	maxExportsPerSeller   int
	maxListReads          int
	maxListReadsPerSeller int
	maxInflight           byteSize
	exportStall           time.Duration
	failureRate           float64
	rateLimit             float64
}

// Defaults of the limits that are not the api package's.
const (
	defaultIdleTimeout = 30 * time.Second
	// fdReserve is the file descriptors kept back from --max-connections
	// besides the database pool and export spools: the listener, the
	// debug listener, log files, the resolver.
	fdReserve = 64
)

// defaultInflightBytes returns the byte budget for a machine whose
// process may use mem bytes: a sixteenth of it (the heap grows by a few
// times the bytes held, while bodies are decoded and answers encoded),
// from 64 MiB to 1 GiB.
func defaultInflightBytes(mem int64) int64 {
	return min(max(mem/16, 64<<20), 1<<30)
}

// machineMemory returns the memory this process may use: its cgroup's
// limit (v2, then v1) when it has one, else the machine's RAM; 4 GiB
// when neither can be read.
func machineMemory() int64 {
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && v > 0 && v < 1<<60 {
			return v
		}
	}
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err == nil && si.Totalram > 0 {
		return int64(si.Totalram) * int64(si.Unit)
	}
	return 4 << 30
}

// addLimitFlags registers the limit flags on fs, writing to l.
func addLimitFlags(fs *flag.FlagSet, l *limits) {
	fs.IntVar(&l.maxConnections, "max-connections", 0, "most client connections open at once; more wait in the listen queue (0: the open-file limit less the database pool, export spools and a reserve)")
	fs.DurationVar(&l.idleTimeout, "idle-timeout", defaultIdleTimeout, "how long an idle keep-alive connection is kept open")
	fs.IntVar(&l.maxExports, "max-exports", 0, "audit exports in progress at once over all sellers, 429 too_many_exports past it (0: 4, or a quarter of --max-conns when that is less, at least 1)")
	fs.IntVar(&l.maxExportsPerSeller, "max-exports-per-seller", api.DefaultMaxExportsPerSeller, "audit exports in progress at once for one seller (at most --max-exports)")
	fs.IntVar(&l.maxListReads, "max-list-reads", api.DefaultMaxListReads, "list pages (invoices of a series, events) read at once over all sellers; a list waits up to 2s for a slot, then gets 429 too_many_reads")
	fs.IntVar(&l.maxListReadsPerSeller, "max-list-reads-per-seller", api.DefaultMaxListReadsPerSeller, "list pages read at once for one seller (at most --max-list-reads)")
	l.maxInflight = byteSize(defaultInflightBytes(machineMemory()))
	fs.Var(&l.maxInflight, "max-inflight-bytes", "the `size` in bytes that requests in progress may hold in buffers (bodies as they arrive, answers while built and sent), one seller a quarter of them (at least 16MiB); past it a request gets 503 server_busy with Retry-After before its buffer grows (default: a sixteenth of this machine's memory or cgroup limit, from 64MiB to 1GiB)")
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
	case l.maxListReads < 1 || l.maxListReadsPerSeller < 1:
		return usageErrorf("serve: --max-list-reads and --max-list-reads-per-seller must be at least 1")
	case l.maxInflight < 4<<20:
		return usageErrorf("serve: --max-inflight-bytes must be at least 4MiB (a list page)")
	case l.exportStall <= 0:
		return usageErrorf("serve: --export-stall-timeout must be positive")
	case l.failureRate < 0:
		return usageErrorf("serve: --failure-rate must be 0 (no limit) or more")
	case l.rateLimit < 0:
		return usageErrorf("serve: --rate-limit must be 0 (no limit) or more")
	}
	l.maxExportsPerSeller = min(l.maxExportsPerSeller, l.maxExports)
	l.maxListReadsPerSeller = min(l.maxListReadsPerSeller, l.maxListReads)
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
	cfg.MaxListReads, cfg.MaxListReadsPerSeller = l.maxListReads, l.maxListReadsPerSeller
	cfg.MaxInflightBytes = int64(l.maxInflight)
	cfg.FailureRate = l.failureRate
	cfg.KeyRate = l.rateLimit
	if l.failureRate == 0 {
		cfg.FailureRate = -1 // the flag's 0 is "no limit", Config's is "default"
	}
}
