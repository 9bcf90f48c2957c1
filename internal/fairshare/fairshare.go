// Package fairshare is the shape of the background work that serves
// sellers (the webhook deliverer in webhook/outbox, the IRP workers in
// einvoice/registration): workers that run rounds until stopped (Run),
// each round serving every seller with due work once and holding a seller
// with slow receivers or a backlog to its share of the workers (Slots), and
// the backoff of work that must be tried again (Backoff).
package fairshare

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Slots counts the work of each seller in flight in one process and holds
// each seller to a maximum. The zero Slots is not usable; make one with
// New.
type Slots struct {
	mu  sync.Mutex
	max int
	n   map[int64]int // seller → work in flight, never 0 (deleted)
}

// New returns Slots that allow max of a seller's work in flight at once;
// max below 1 is 1.
func New(max int) *Slots { return &Slots{max: maxOf(max, 1), n: map[int64]int{}} }

func maxOf(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// Take takes one of seller's slots and reports whether one was free.
func (s *Slots) Take(seller int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[seller] >= s.max {
		return false
	}
	s.n[seller]++
	return true
}

// Release gives back a slot of seller that Take gave. It panics when seller
// holds none: the bookkeeping is broken.
func (s *Slots) Release(seller int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch n := s.n[seller]; {
	case n <= 0:
		panic("fairshare: slot released that was not taken")
	case n == 1:
		delete(s.n, seller)
	default:
		s.n[seller] = n - 1
	}
}

// Round serves, in turn, each of sellers whose slot is free with serve,
// which does one piece of the seller's work and reports whether it found
// any; it stops early when stop reports true or serve fails. So every
// seller with due work is served once a round whatever another's backlog.
// It returns how many pieces were done, and serve's first error.
func (s *Slots) Round(sellers []int64, stop func() bool, serve func(seller int64) (bool, error)) (int, error) {
	done := 0
	for _, seller := range sellers {
		if stop() {
			break
		}
		if !s.Take(seller) {
			continue
		}
		did, err := serve(seller)
		s.Release(seller)
		if did {
			done++
		}
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// Run runs workers goroutines until ctx ends, each calling round again and
// again: at once after a round that did something, after poll when it did
// nothing or failed (its error is given to failed, unless ctx ended). It
// returns once every worker has stopped.
func Run(ctx context.Context, workers int, poll time.Duration, round func(context.Context) (int, error), failed func(error)) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				n, err := round(ctx)
				if err != nil && ctx.Err() == nil {
					failed(err)
				}
				if n == 0 || err != nil {
					select {
					case <-ctx.Done():
					case <-time.After(poll):
					}
				}
			}
		})
	}
	wg.Wait()
}

// Backoff returns the wait after the attempts-th failed attempt: base,
// doubling with each attempt up to most, with ±20% jitter.
func Backoff(base, most time.Duration, attempts int) time.Duration {
	d := base
	for i := 1; i < attempts && d < most; i++ {
		d *= 2
	}
	d = min(d, most)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
