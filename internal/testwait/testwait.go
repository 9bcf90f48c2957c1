// Package testwait is the one way tests wait for a condition that another
// goroutine, process or server makes true: poll it until a deadline and
// fail the test with what was awaited. It imports nothing of invoiced, so
// tests of every package, package-internal ones included, can use it.
package testwait

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Poll is how often Until checks its condition.
const Poll = 5 * time.Millisecond

// Until calls cond every Poll until it returns true, and fails the test
// (t.Fatalf, "timed out after 10s waiting for <what>") when it is still
// false after timeout. what is a format with args, naming the condition.
func Until(t testing.TB, timeout time.Duration, cond func() bool, what string, args ...any) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(Poll) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, fmt.Sprintf(what, args...))
		}
	}
}

// Buffer is a bytes.Buffer safe for one writer and concurrent readers: the
// output of a server or background loop that a test polls with Until.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
