// Package benchcpu reports the processor time a benchmark's process spent,
// per operation or per unit, next to the wall time go test prints. On a
// host whose cores are shared with other work the wall time per operation
// moves with the others' load; the process's own CPU time moves far less,
// so A/B comparisons of two builds read it instead.
package benchcpu

import (
	"syscall"
	"testing"
	"time"
)

// Start begins measuring the process's CPU time (user and system, every
// thread, the garbage collector included). The function it returns ends
// the measurement and reports it on b as "cpu-µs/<unit>", divided by
// perOp × b.N units (perOp 1 with unit "op" gives CPU per operation).
// Call it after the set-up, and the returned function before b's timer
// stops mattering (b.StopTimer is not needed).
func Start(b *testing.B, unit string, perOp int) func() {
	b.Helper()
	before := now(b)
	return func() {
		d := now(b) - before
		b.ReportMetric(float64(d.Nanoseconds())/1e3/float64(b.N*perOp), "cpu-µs/"+unit)
	}
}

// now returns the CPU time the process has used so far.
func now(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("benchcpu: getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
