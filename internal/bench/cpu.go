package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// CPU is where the processor time of one measurement went, per
// acknowledged invoice, in microseconds: the invoiced server, every
// PostgreSQL process on the machine, and the bench process itself (the load
// generator). Busy is the machine's busy fraction over the run (0..1).
// Unlike invoices/s, these figures hardly move with the machine's noise,
// so they are the ones to compare when judging a change. Linux only; zero
// elsewhere.
type CPU struct {
	Server   float64 `json:"server_us_per_invoice"`
	Postgres float64 `json:"postgres_us_per_invoice"`
	Load     float64 `json:"load_us_per_invoice"`
	Busy     float64 `json:"machine_busy"`
	// Coordinator and Workers split Postgres on a Citus cluster whose
	// nodes run on this machine: the coordinator's processes, and every
	// worker's together (zero otherwise).
	Coordinator float64 `json:"coordinator_us_per_invoice,omitempty"`
	Workers     float64 `json:"workers_us_per_invoice,omitempty"`
}

// clockTick is the unit of /proc's utime and stime: USER_HZ, 100 on every
// Linux architecture Go runs on.
const clockTick = 10 * time.Millisecond

// cpuSample is a reading of the counters CPU is worked out from.
type cpuSample struct {
	ok                  bool
	server, pg, load    time.Duration
	pgDirs              map[string]time.Duration // postgres processes' time by working directory
	machBusy, machTotal int64                    // ticks, from /proc/stat
}

// sampleCPU reads the processor time used so far by serverPID (0: none),
// by every process named postgres (also by its working directory, which is
// its server's data directory), by this process, and by the machine. ok is
// false when /proc cannot be read.
func sampleCPU(serverPID int) cpuSample {
	var s cpuSample
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	f := bytes.Fields(line) // cpu user nice system idle iowait irq softirq steal …
	if len(f) < 9 || string(f[0]) != "cpu" {
		return s
	}
	for i, v := range f[1:9] {
		n, _ := strconv.ParseInt(string(v), 10, 64)
		s.machTotal += n
		if i != 3 && i != 4 { // idle, iowait
			s.machBusy += n
		}
	}
	if serverPID > 0 {
		s.server, _, _ = procCPU(filepath.Join("/proc", strconv.Itoa(serverPID), "stat"))
	}
	dirs, _ := os.ReadDir("/proc")
	s.pgDirs = map[string]time.Duration{}
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		if t, children, comm := procCPU(filepath.Join("/proc", d.Name(), "stat")); comm == "postgres" {
			s.pg += t
			// By node, the time of exited backends too, which their
			// postmaster reaped: pgbench's sessions, and the
			// connections a coordinator's session opened to the workers,
			// end before the second sample.
			if cwd, err := os.Readlink(filepath.Join("/proc", d.Name(), "cwd")); err == nil {
				s.pgDirs[cwd] += t + children
			}
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.load = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	s.ok = true
	return s
}

// procCPU returns the user+system time, that of its reaped children and
// the command name in a /proc/PID/stat file, or zeros and "" when it
// cannot be read.
func procCPU(path string) (own, children time.Duration, comm string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, ""
	}
	// pid (comm) state ppid … utime(14) stime(15): comm may hold spaces
	// and parentheses, so fields are counted after the last ')'.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return 0, 0, ""
	}
	f := bytes.Fields(b[end+1:]) // state is f[0], field 3 of the file
	if len(f) < 15 {
		return 0, 0, ""
	}
	n := func(i int) time.Duration {
		v, _ := strconv.ParseInt(string(f[i]), 10, 64)
		return time.Duration(v) * clockTick
	}
	return n(11) + n(12), n(13) + n(14), string(b[open+1 : end]) // utime stime cutime cstime
}

// cpuBetween works out the CPU figures of n invoices from two samples,
// split by node when cl (nil on plain PostgreSQL) names a Citus cluster.
// A postgres process that exited in between is missed, which is why the
// server's pool keeps its connections; the figure is then a lower bound.
func cpuBetween(a, b cpuSample, n int64, cl *citusCluster) CPU {
	if !a.ok || !b.ok || n <= 0 {
		return CPU{}
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	c := CPU{Server: per(b.server - a.server), Postgres: per(max(0, b.pg-a.pg)), Load: per(b.load - a.load)}
	if t := b.machTotal - a.machTotal; t > 0 {
		c.Busy = float64(b.machBusy-a.machBusy) / float64(t)
	}
	cl.split(&c, a, b, n)
	return c
}
