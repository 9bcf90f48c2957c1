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
}

// clockTick is the unit of /proc's utime and stime: USER_HZ, 100 on every
// Linux architecture Go runs on.
const clockTick = 10 * time.Millisecond

// cpuSample is a reading of the counters CPU is worked out from.
type cpuSample struct {
	ok                  bool
	server, pg, load    time.Duration
	machBusy, machTotal int64 // ticks, from /proc/stat
}

// sampleCPU reads the processor time used so far by serverPID (0: none),
// by every process named postgres, by this process, and by the machine.
// ok is false when /proc cannot be read.
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
		s.server, _ = procCPU(filepath.Join("/proc", strconv.Itoa(serverPID), "stat"))
	}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		if t, comm := procCPU(filepath.Join("/proc", d.Name(), "stat")); comm == "postgres" {
			s.pg += t
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.load = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	s.ok = true
	return s
}

// procCPU returns the user+system time and the command name in a
// /proc/PID/stat file, or zero and "" when it cannot be read.
func procCPU(path string) (time.Duration, string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, ""
	}
	// pid (comm) state ppid … utime(14) stime(15): comm may hold spaces
	// and parentheses, so fields are counted after the last ')'.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return 0, ""
	}
	f := bytes.Fields(b[end+1:]) // state is f[0], field 3 of the file
	if len(f) < 13 {
		return 0, ""
	}
	u, _ := strconv.ParseInt(string(f[11]), 10, 64)
	st, _ := strconv.ParseInt(string(f[12]), 10, 64)
	return time.Duration(u+st) * clockTick, string(b[open+1 : end])
}

// cpuBetween works out the CPU figures of n invoices from two samples. A
// postgres process that exited in between is missed, which is why the
// server's pool keeps its connections; the figure is then a lower bound.
func cpuBetween(a, b cpuSample, n int64) CPU {
	if !a.ok || !b.ok || n <= 0 {
		return CPU{}
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	c := CPU{Server: per(b.server - a.server), Postgres: per(max(0, b.pg-a.pg)), Load: per(b.load - a.load)}
	if t := b.machTotal - a.machTotal; t > 0 {
		c.Busy = float64(b.machBusy-a.machBusy) / float64(t)
	}
	return c
}
