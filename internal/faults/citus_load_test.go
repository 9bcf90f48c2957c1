//go:build citus

package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// issueUntil starts, for each seller, perSeller clients of the server at
// base, recording into h, that issue into the seller's series one keyed
// request after another (keys tag-CODE-G-NNNNN) until stop is closed or
// ctx ends; wg counts them (loadEnder waits for them). The clients'
// connections close when the test ends.
func issueUntil(ctx context.Context, t *testing.T, h *History, base, tag string, sellers []citusSeller, perSeller int, stop chan struct{}, wg *sync.WaitGroup) {
	for i, s := range sellers {
		c := newClient(h, s.key, base, tag)
		t.Cleanup(c.close)
		for g := range perSeller {
			id := i*perSeller + g
			wg.Go(func() {
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					case <-ctx.Done():
						return
					default:
					}
					c.issue(ctx, id, s.code, fmt.Sprintf("%s-%s-%d-%05d", tag, s.code, g, n), time.Now().Add(retryWindow))
				}
			})
		}
	}
}

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
