package outbox

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/db"
)

// Workers claiming at once (of one process or several) share the due
// deliveries of many sellers: while its lease lasts each delivery is
// claimed by exactly one of them, and together they claim every one,
// though each claim takes at most a few sellers' deliveries (on Citus each
// seller's claim is a statement on that seller's shard alone).
func TestDeliveryClaimsShareEverySellerOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const sellers, each = 6, 9
	type sellerSeries struct {
		seller gst.Seller
		series gst.Series
	}
	all := []sellerSeries{{e.seller, e.series}}
	for i := 1; i < sellers; i++ {
		s, sr := e.addSeller(fmt.Sprintf("27AAPFU%04dF1Z", i))
		all = append(all, sellerSeries{s, sr})
	}
	for _, x := range all {
		e.registerWebhook(x.seller, "http://127.0.0.1:9/never", "invoice.issued")
		for range each {
			e.mustIssue(x.seller, x.series)
		}
	}

	type key struct{ seller, event, webhook int64 }
	var mu sync.Mutex
	claimed := map[key]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				ds, err := claimDeliveries(t.Context(), e.pool, 4, time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					if d.ev.Invoice.SellerID != d.sellerID {
						t.Errorf("delivery of seller %d carries an invoice of seller %d", d.sellerID, d.ev.Invoice.SellerID)
					}
					claimed[key{d.sellerID, d.ev.ID, d.webhookID}]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	perSeller := map[int64]int{}
	for k, n := range claimed {
		if n != 1 {
			t.Errorf("delivery %+v claimed %d times within its lease", k, n)
		}
		perSeller[k.seller]++
	}
	if len(claimed) != sellers*each || len(perSeller) != sellers {
		t.Fatalf("claimed %d deliveries of %d sellers, want %d of %d", len(claimed), len(perSeller), sellers*each, sellers)
	}
	var due int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM webhook_deliveries WHERE next_at <= now()`).Scan(&due); err != nil || due != 0 {
		t.Fatalf("%d deliveries still due after the claims (%v)", due, err)
	}
}

// TestStaleFinishChangesNothing: a worker whose claim ran out while it
// sent (another worker claimed the delivery again and delivered it) must
// not turn the delivered delivery back into pending when it finishes:
// only the attempt that was claimed last may be finished.
func TestStaleFinishChangesNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	e.registerWebhook(e.seller, "http://127.0.0.1:9/hook", "invoice.issued")
	e.mustIssue(e.seller, e.series)
	first, err := claimDeliveries(ctx, e.pool, 1, 0) // a claim that has run out at once
	if err != nil || len(first) != 1 {
		t.Fatalf("first claim: %d, %v", len(first), err)
	}
	second, err := claimDeliveries(ctx, e.pool, 1, time.Hour)
	if err != nil || len(second) != 1 || second[0].attempts != first[0].attempts+1 {
		t.Fatalf("second claim: %+v, %v", second, err)
	}
	if err := finishDelivery(ctx, e.pool, second[0], "delivered", 200, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := finishDelivery(ctx, e.pool, first[0], "pending", 500, "HTTP 500", time.Now()); err != nil {
		t.Fatal(err)
	}
	if state, attempts := e.deliveryState(); state != "delivered" || attempts != 2 {
		t.Fatalf("after the stale attempt finished: %s after %d attempts, want delivered after 2", state, attempts)
	}
}

// TestDeletedWebhookGetsNothingMore: deleting a webhook while one of its
// deliveries is in flight stops it for good (the attempt's finish does
// not make it pending again), and a delivery of a deleted webhook still
// pending is never claimed.
func TestDeletedWebhookGetsNothingMore(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	w := e.registerWebhook(e.seller, "http://127.0.0.1:9/hook", "invoice.issued")
	e.mustIssue(e.seller, e.series)
	ds, err := claimDeliveries(ctx, e.pool, 1, time.Hour)
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim: %d, %v", len(ds), err)
	}
	if err := DeleteWebhook(ctx, e.pool, e.seller.ID, w.PublicID); err != nil {
		t.Fatal(err)
	}
	if err := finishDelivery(ctx, e.pool, ds[0], "pending", 500, "HTTP 500", time.Now()); err != nil {
		t.Fatal(err)
	}
	if state, _ := e.deliveryState(); state != "failed" {
		t.Fatalf("the in-flight delivery of a deleted webhook is %s after its attempt, want failed", state)
	}
	// A delivery left pending for a deleted webhook (deleted by hand, or
	// a race the delete did not see) is not claimed.
	if _, err := e.pool.Exec(ctx, `UPDATE webhook_deliveries SET state = 'pending', next_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if ds, err := claimDeliveries(ctx, e.pool, 8, time.Hour); err != nil || len(ds) != 0 {
		t.Fatalf("claimed %d deliveries of a deleted webhook (%v)", len(ds), err)
	}
	// Nor by a worker that already chose the seller (dueSellers, which
	// skips it now, ran before the deletion).
	if ds, err := claimSellerDeliveries(ctx, e.pool, e.seller.ID, 8, time.Hour); err != nil || len(ds) != 0 {
		t.Fatalf("claimed %d deliveries of a deleted webhook for its seller (%v)", len(ds), err)
	}
}

// claimDeliveries claims up to n due deliveries for lease, at most one
// per seller in each pass over the sellers with due deliveries (so one
// seller's backlog does not fill a claim): their next_at moves lease ahead
// and their attempts count up, so another worker (of this or another
// process) skips them meanwhile (FOR UPDATE SKIP LOCKED while claiming,
// next_at after), and a worker that dies leaves them due again when the
// lease ends. It returns them with their events. The Deliverer claims one
// delivery at a time (dueSellers, claimSellerDeliveries); the tests claim
// several at once with this.
//
// It claims seller by seller (claimSellerDeliveries), because Citus runs
// FOR UPDATE only in a statement that goes to one shard. Workers that
// read the same sellers at once share them: each skips the rows another
// has locked, and rows another has claimed are no longer due.
func claimDeliveries(ctx context.Context, q db.Querier, n int, lease time.Duration) ([]delivery, error) {
	sellers, err := dueSellers(ctx, q, n*candidatesPerClaim)
	if err != nil {
		return nil, err
	}
	var out []delivery
	for len(out) < n && len(sellers) > 0 {
		left := sellers[:0]
		for _, s := range sellers {
			if len(out) == n {
				break
			}
			ds, err := claimSellerDeliveries(ctx, q, s, 1, lease)
			if err != nil {
				return out, err
			}
			if len(ds) > 0 {
				out = append(out, ds...)
				left = append(left, s)
			}
		}
		sellers = left
	}
	return out, nil
}

// candidatesPerClaim is how many sellers claimDeliveries reads per
// delivery it claims: enough that a process's workers polling at once
// each find unclaimed ones.
const candidatesPerClaim = 4
