package testwait_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/testwait"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	go func() {
		for range 3 {
			time.Sleep(time.Millisecond)
			n.Add(1)
		}
	}()
	testwait.Until(t, 10*time.Second, func() bool { return n.Load() == 3 }, "n to reach 3")
}

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as testing.T's does, without failing the test.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestUntilFailsWithTheMessageAtTheDeadline(t *testing.T) {
	t.Parallel()
	r := &recorder{TB: t}
	var calls atomic.Int64
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		testwait.Until(r, 30*time.Millisecond, func() bool { calls.Add(1); return false }, "serial %d", 7)
		r.msg = "returned"
	}()
	<-done
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Fatalf("gave up after %v, before the deadline", took)
	}
	if want := "timed out after 30ms waiting for serial 7"; r.msg != want {
		t.Fatalf("message %q, want %q", r.msg, want)
	}
	if calls.Load() < 2 {
		t.Fatalf("condition checked %d times, want polling", calls.Load())
	}
}
