package irp_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/einvoicetest"
	"github.com/invoiced/invoiced/einvoice/irpsandbox"
	"github.com/invoiced/invoiced/internal/testwait"
)

// requests returns how many Generate IRN requests for p's key the sandbox
// acted on.
func requests(env interface {
	Registrations(string) []irpsandbox.Registration
}, irn string) int {
	for _, r := range env.Registrations(seller) {
		if r.IRN == irn {
			return r.Requests
		}
	}
	return 0
}

// TestLostAnswers: for each way an exchange can fail, what the client
// concludes and what the sandbox did; and that RegisterOnce then ends with
// exactly one registration.
func TestLostAnswers(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	for i, c := range []struct {
		fault   irpsandbox.Fault
		want    einvoice.Kind
		acted   int // Generate requests acted on when the call returns
		settled int // once a delayed request has acted
	}{
		{irpsandbox.Fault{Op: einvoice.OpRegister, Mode: irpsandbox.DropBefore, Times: 1}, einvoice.KindUnknown, 0, 0},
		{irpsandbox.Fault{Op: einvoice.OpRegister, Mode: irpsandbox.DropAfter, Times: 1}, einvoice.KindUnknown, 1, 1},
		{irpsandbox.Fault{Op: einvoice.OpRegister, Mode: irpsandbox.DelayAfter, Delay: 2 * timeout, Times: 1}, einvoice.KindUnknown, 1, 1},
		{irpsandbox.Fault{Op: einvoice.OpRegister, Mode: irpsandbox.DelayBefore, Delay: 2 * timeout, Times: 1}, einvoice.KindUnknown, 0, 1},
		{irpsandbox.Fault{Op: einvoice.OpAuth, Mode: irpsandbox.DropBefore, Times: 1}, einvoice.KindUnavailable, 0, 0},
		{irpsandbox.Fault{Op: einvoice.OpAuth, Mode: irpsandbox.DropAfter, Times: 1}, einvoice.KindUnavailable, 0, 0},
	} {
		t.Run(fmt.Sprintf("%s %s", c.fault.Op, c.fault.Mode), func(t *testing.T) {
			t.Parallel()
			env, cl := setup(t, timeout)
			p := einvoicetest.Payload(t, int64(100+i), buyer)
			key, _ := einvoice.KeyOf(p)
			if err := env.Server.AddFault(c.fault); err != nil {
				t.Fatal(err)
			}
			_, err := cl.Register(t.Context(), p)
			if k := kindOf(t, err); k != c.want {
				t.Fatalf("Register = %v; want %s", err, c.want)
			}
			if n := requests(env.Server, key.IRN()); n != c.acted {
				t.Errorf("the sandbox acted on %d requests when the client returned; want %d", n, c.acted)
			}
			testwait.Until(t, 5*time.Second, func() bool { return requests(env.Server, key.IRN()) == c.settled }, "%d acted requests", c.settled)
			reg, err := einvoice.RegisterOnce(t.Context(), cl, p)
			if err != nil || reg.IRN != key.IRN() {
				t.Fatalf("RegisterOnce = %+v, %v", reg, err)
			}
			if rs := env.Server.Registrations(seller); len(rs) != 1 || rs[0].IRN != reg.IRN {
				t.Errorf("the sandbox holds %+v; want one registration %s", rs, reg.IRN)
			}
		})
	}
}

// TestExactlyOnceUnderFaults registers documents from several goroutines
// while the sandbox drops requests and answers, delays them past the
// client's timeout and drops authentications, at random (the seed is
// printed). Each worker asks RegisterOnce again until it succeeds, waiting
// out a delayed request before it asks again; now and then the sandbox
// drops every token (1005, renewal). After each attempt: an
// attempt the client called "not done" was not acted on. At the end: each
// document has exactly one registration, and the client holds its IRN.
func TestExactlyOnceUnderFaults(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const (
		docs    = 24
		workers = 4
		timeout = 150 * time.Millisecond
		delay   = 2 * timeout
	)
	env, cl := setup(t, timeout)
	for _, f := range []irpsandbox.Fault{
		{Op: einvoice.OpRegister, Mode: irpsandbox.DropBefore, Probability: 0.2},
		{Op: einvoice.OpRegister, Mode: irpsandbox.DropAfter, Probability: 0.2},
		{Op: einvoice.OpRegister, Mode: irpsandbox.DelayAfter, Delay: delay, Probability: 0.15},
		{Op: einvoice.OpRegister, Mode: irpsandbox.DelayBefore, Delay: delay, Probability: 0.1},
		{Op: einvoice.OpGet, Mode: irpsandbox.DropAfter, Probability: 0.2},
		{Op: einvoice.OpAuth, Mode: irpsandbox.DropBefore, Probability: 0.2},
	} {
		if err := env.Server.AddFault(f); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		irn      string
		attempts int
	}
	results := make([]result, docs)
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var violations []string
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := range jobs {
				p := einvoicetest.Payload(t, int64(1000+i), buyer)
				key, _ := einvoice.KeyOf(p)
				for attempt := 1; ; attempt++ {
					if rng.IntN(8) == 0 {
						env.Server.ExpireTokens() // the next call meets 1005
					}
					before := requests(env.Server, key.IRN())
					reg, err := einvoice.RegisterOnce(t.Context(), cl, p)
					after := requests(env.Server, key.IRN())
					if err == nil {
						results[i] = result{irn: reg.IRN, attempts: attempt}
						break
					}
					k := einvoice.KindOf(err)
					if k.Outcome() == einvoice.OutcomeNotDone && after > before {
						mu.Lock()
						violations = append(violations, fmt.Sprintf("doc %d attempt %d: %v, yet the sandbox acted (%d → %d)", i, attempt, err, before, after))
						mu.Unlock()
					}
					if !k.Retry() && k != einvoice.KindDuplicate {
						mu.Lock()
						violations = append(violations, fmt.Sprintf("doc %d attempt %d: gave up on %v", i, attempt, err))
						mu.Unlock()
						break
					}
					time.Sleep(delay + time.Duration(rng.IntN(20))*time.Millisecond) // a delayed request has acted
				}
			}
		}(w)
	}
	for i := 0; i < docs; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for _, v := range violations {
		t.Errorf("seed %d: %s", seed, v)
	}
	held := map[string]int{}
	for _, r := range env.Server.Registrations(seller) {
		held[r.IRN]++
	}
	attempts := 0
	for i, r := range results {
		attempts += r.attempts
		if r.irn == "" {
			continue // reported above
		}
		if held[r.irn] != 1 {
			t.Errorf("seed %d: doc %d: %d registrations of its IRN %s", seed, i, held[r.irn], r.irn)
		}
		delete(held, r.irn)
	}
	if len(held) != 0 {
		t.Errorf("seed %d: registrations no document holds: %v", seed, held)
	}
	t.Logf("%d documents, %d attempts, %d Generate requests, %d authentications", docs, attempts,
		env.Server.Calls(einvoice.OpRegister), env.Server.Calls(einvoice.OpAuth))
}
