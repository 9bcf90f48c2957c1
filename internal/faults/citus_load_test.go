//go:build citus

package faults

import (
	"sync"
	"testing"
	"time"
)

// loadEnder returns the function that ends a Citus fault test's load: it
// closes stop (once, however often it is called) and waits for the
// clients in wg, failing the test when they have not finished within the
// clients' retry window and 30 s more. Tests call it when the load has
// served its purpose, and defer it for the paths that fail before.
func loadEnder(t *testing.T, stop chan struct{}, wg *sync.WaitGroup) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(retryWindow + 30*time.Second):
				t.Fatalf("the clients did not finish within %s", retryWindow+30*time.Second)
			}
		})
	}
}
