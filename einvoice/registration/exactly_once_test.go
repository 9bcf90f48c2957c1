package registration

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/irpsandbox"
	"github.com/invoiced/invoiced/einvoice/irpsandbox/sandboxtest"
	"github.com/invoiced/invoiced/invoice"
	"github.com/jackc/pgx/v5/pgxpool"
)

var (
	exactlyOnceRuns = flag.Int("runs", 2, "TestIRNExactlyOnce: randomized runs")
	exactlyOnceSeed = flag.Uint64("seed", 0, "TestIRNExactlyOnce: seed of the first run (the next runs take the following seeds); 0 draws one")
)

// TestIRNExactlyOnce issues B2B and B2C invoices of an e-invoicing seller
// while the IRP drops requests and answers, answers late (past the
// client's timeout, so the worker concludes nothing and asks again) and
// acts late (after the worker gave up), while the workers are killed at
// random points (their context cancelled mid-attempt, and half the time
// their database sessions cut too, so that nothing is recorded: a send
// whose answer is never stored) and restarted, and while invoices are
// cancelled at random, through the API's path (which cancels a registered
// IRN first) or as a till's upload does (the invoice alone). Then the
// faults stop and a worker settles what is left. After each run: every B2B
// invoice that is not cancelled has exactly one IRN at the IRP, active and
// equal to the one stored; every cancelled invoice has no live IRN (none,
// or cancelled) and its registration is recorded cancelled; B2C invoices
// never reached the IRP. Each run prints its seed on failure; -args -seed N
// -runs 1 replays it.
func TestIRNExactlyOnce(t *testing.T) {
	t.Parallel()
	seed := *exactlyOnceSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	for run := range *exactlyOnceRuns {
		s := seed + uint64(run)
		t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("replay: go test ./einvoice/registration/ -run 'TestIRNExactlyOnce' -args -seed %d -runs 1", s)
				}
			})
			exactlyOnceRun(t, s)
		})
	}
}

// exactlyOnceRun is one run of TestIRNExactlyOnce.
func exactlyOnceRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	e := setup(t)
	e.irp = sandboxtest.Start(t, irpsandbox.Config{Seed: seed})
	late := 2 * clientTimeout
	for _, f := range []irpsandbox.Fault{
		{Op: einvoice.OpAuth, Mode: irpsandbox.DropBefore, Probability: 0.05},
		{Op: einvoice.OpRegister, Mode: irpsandbox.DropBefore, Probability: 0.15},
		{Op: einvoice.OpRegister, Mode: irpsandbox.DropAfter, Probability: 0.2},
		{Op: einvoice.OpRegister, Mode: irpsandbox.DelayAfter, Delay: late, Probability: 0.1},
		{Op: einvoice.OpRegister, Mode: irpsandbox.DelayBefore, Delay: late, Probability: 0.1},
		{Op: einvoice.OpGet, Mode: irpsandbox.DropAfter, Probability: 0.1},
		{Op: einvoice.OpLookup, Mode: irpsandbox.DropAfter, Probability: 0.1},
		{Op: einvoice.OpCancel, Mode: irpsandbox.DropAfter, Probability: 0.15},
		{Op: einvoice.OpCancel, Mode: irpsandbox.DelayBefore, Delay: late, Probability: 0.1},
	} {
		if err := e.irp.Server.AddFault(f); err != nil {
			t.Fatal(err)
		}
	}
	client := sandboxtest.Client(t, e.irp.ClientConfig(t, clientTimeout))
	e.client = client

	ctx, stop := context.WithCancel(t.Context())
	var crew sync.WaitGroup
	// Two worker processes, each killed and restarted at random.
	for k := range 2 {
		crew.Go(func() {
			e.killedAtRandom(ctx, t, rand.New(rand.NewPCG(seed+uint64(k)+1, 7)), fmt.Sprintf("irp-worker-%d-%d", seed%100000, k))
		})
	}

	canceller := NewCanceller(e.pool, client, e.opt, clientTimeout)
	var issued []document.Invoice
	for range 14 + rng.IntN(6) {
		buyer := b2b()
		if rng.IntN(4) == 0 {
			buyer = nil
		}
		issued = append(issued, e.issue(buyer))
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		if rng.IntN(10) < 3 {
			victim := issued[rng.IntN(len(issued))]
			e.cancelAtRandom(rng, canceller, victim)
		}
	}
	// The chaos goes on a while with everything issued.
	for range 4 {
		time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
		if rng.IntN(2) == 0 {
			e.cancelAtRandom(rng, canceller, issued[rng.IntN(len(issued))])
		}
	}
	stop()
	crew.Wait()

	// Quiet: no faults, delayed requests acted, one worker settles the rest.
	e.irp.Server.ClearFaults()
	time.Sleep(late + 100*time.Millisecond)
	e.settleAll(e.worker(e.pool), 90*time.Second)

	regs := map[string]irpsandbox.Registration{}
	for _, r := range e.irp.Server.Registrations(string(e.seller.GSTIN)) {
		regs[r.IRN] = r
	}
	b2bCount := 0
	for _, inv := range issued {
		got := e.get(inv.ID)
		r, atIRP := regs[keyOf(e.seller, got).IRN()]
		delete(regs, r.IRN)
		switch {
		case !einvoice.Applicable(inv):
			if atIRP || got.EInvoice.Status != einvoice.StatusNotApplicable {
				t.Errorf("%s (B2C): at the IRP %v, status %s", got.Number, atIRP, got.EInvoice.Status)
			}
		case got.Status == document.StatusCancelled:
			b2bCount++
			if got.EInvoice.Status != einvoice.StatusCancelled || (atIRP && r.Status != "CNL") {
				t.Errorf("%s (cancelled): status %s, at the IRP %v %s: a live IRN for a cancelled invoice", got.Number, got.EInvoice.Status, atIRP, r.Status)
			}
		default:
			b2bCount++
			switch {
			case !atIRP:
				t.Errorf("%s: no IRN at the IRP (status %s, error %q)", got.Number, got.EInvoice.Status, got.EInvoice.Error)
			case r.Status != "ACT":
				t.Errorf("%s (issued): its IRN is %s at the IRP", got.Number, r.Status)
			case got.EInvoice.Status != einvoice.StatusRegistered || got.EInvoice.IRN != r.IRN || got.EInvoice.AckNo != r.AckNo:
				t.Errorf("%s: stored %s %s/%s, the IRP holds %s/%s", got.Number, got.EInvoice.Status, got.EInvoice.IRN, got.EInvoice.AckNo, r.IRN, r.AckNo)
			}
		}
	}
	for irn, r := range regs {
		t.Errorf("the IRP holds %s (%s %s) for no invoice", irn, r.DocType, r.DocNo)
	}
	t.Logf("seed %d: %d invoices (%d B2B), %d Generate IRN requests, %d cancels, %d lookups by IRN",
		seed, len(issued), b2bCount, e.irp.Server.Calls(einvoice.OpRegister), e.irp.Server.Calls(einvoice.OpCancel), e.irp.Server.Calls(einvoice.OpGet))
}

// killedAtRandom runs worker processes one after another until ctx ends,
// each with a pool and an IRP client of its own, killing each after a
// random while: its context cancelled wherever it is, and half the time
// its database sessions terminated at once, so that what it was about to
// record is lost (the lease then hands its row to another).
func (e *env) killedAtRandom(ctx context.Context, t *testing.T, rng *rand.Rand, name string) {
	for incarnation := 0; ctx.Err() == nil; incarnation++ {
		app := fmt.Sprintf("%s-%d", name, incarnation)
		cfg := e.pool.Config().Copy()
		cfg.ConnConfig.RuntimeParams["application_name"] = app
		cfg.MaxConns = 4
		pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
		if err != nil {
			t.Error(err)
			return
		}
		w := e.worker(pool)
		w.cfg.Registrar = sandboxtest.Client(t, e.irp.ClientConfig(t, clientTimeout))
		wctx, kill := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { _ = w.Run(wctx); close(done) }()
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(50+rng.IntN(600)) * time.Millisecond):
		}
		kill()
		if rng.IntN(2) == 0 {
			_, _ = e.pool.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app)
		}
		<-done
		pool.Close()
	}
}

// cancelAtRandom cancels inv, through the API's path (IRN first) or as a
// till's upload does (the invoice alone, the workers cancelling its IRN),
// and accepts the refusals a cancel may meet under faults.
func (e *env) cancelAtRandom(rng *rand.Rand, c *Canceller, inv document.Invoice) {
	e.t.Helper()
	ctx := e.t.Context()
	var err error
	if rng.IntN(3) == 0 {
		_, err = invoice.Cancel(ctx, e.pool, e.seller, inv.ID, "cancelled at the till", time.Now(), e.opt)
	} else {
		code := einvoice.CancelReason(1 + rng.IntN(4))
		_, _, err = c.Cancel(ctx, e.seller, CancelRequest{CancelRequest: invoice.CancelRequest{ID: inv.ID, Reason: "cancelled by the API"}, Code: code}, time.Now())
	}
	for _, ok := range []error{invoice.ErrAlreadyCancelled, ErrIRPUnavailable, ErrBusy} {
		if errors.Is(err, ok) {
			return
		}
	}
	if err != nil {
		e.t.Errorf("cancel %s: %v", inv.Number, err)
	}
}
