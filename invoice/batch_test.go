package invoice_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/invoice"
)

// A batch larger than MaxBatch, sent while single requests queue in the
// same series, is numbered in one transaction (its invoices share the
// transaction's issue time): its serials are consecutive in request
// order, and the series has no gap.
func TestIssueBatchIsNeverSplit(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		t.Run(s, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			c := newCommitter(t, s, f.pool, invoice.Config{MaxBatch: 4})
			const batches, size, singles = 6, 25, 8
			var wg sync.WaitGroup
			for w := range singles {
				wg.Go(func() {
					for i := range 15 {
						if r := c.Issue(t.Context(), invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, fmt.Sprintf("s%d-%d", w, i))}); r.Err != nil {
							t.Errorf("single: %v", r.Err)
							return
						}
					}
				})
			}
			results := make([][]invoice.Result, batches)
			for b := range batches {
				wg.Go(func() {
					reqs := make([]invoice.IssueRequest, size)
					for i := range reqs {
						reqs[i] = invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, fmt.Sprintf("b%d-%d", b, i))}
					}
					results[b] = c.IssueBatch(t.Context(), reqs)
				})
			}
			wg.Wait()
			for b, rs := range results {
				for i, r := range rs {
					if r.Err != nil || r.Replayed {
						t.Fatalf("batch %d item %d: %+v", b, i, r)
					}
					if want := rs[0].Invoice.Serial + int64(i); r.Invoice.Serial != want {
						t.Fatalf("batch %d item %d: serial %d, want %d (out of order)", b, i, r.Invoice.Serial, want)
					}
					if !r.Invoice.IssuedAt.Equal(rs[0].Invoice.IssuedAt) {
						t.Fatalf("batch %d item %d issued at %v, item 0 at %v: the batch was split", b, i, r.Invoice.IssuedAt, rs[0].Invoice.IssuedAt)
					}
				}
			}
			checkContiguous(t, serialsOf(t, f), batches*size+singles*15)
		})
	}
}

// TestOneBatchClaimsAKeyOnce: two requests with one idempotency key in
// the same batch (same body or another) are not both issued: the first
// is, the second is told the key is in progress (409), as any concurrent
// duplicate is, and the batch's other members are issued in the same
// transaction, not failed and retried over the key.
func TestOneBatchClaimsAKeyOnce(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		t.Run(s, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			c := newCommitter(t, s, f.pool, invoice.Config{})
			other := f.draft(t, "k")
			other.RequestHash = []byte("another body")
			rs := c.IssueBatch(t.Context(), []invoice.IssueRequest{
				{Seller: f.seller, Series: f.s, Draft: f.draft(t, "before")},
				{Seller: f.seller, Series: f.s, Draft: f.draft(t, "k")},
				{Seller: f.seller, Series: f.s, Draft: f.draft(t, "k")},
				{Seller: f.seller, Series: f.s, Draft: other},
				{Seller: f.seller, Series: f.s, Draft: f.draft(t, "after")},
			})
			for i, want := range []string{"issued", "issued", "in progress", "in progress", "issued"} {
				got := "issued"
				switch r := rs[i]; {
				case errors.Is(r.Err, invoice.ErrKeyInProgress):
					got = "in progress"
				case r.Err != nil || r.Replayed:
					got = fmt.Sprintf("%+v", r)
				}
				if got != want {
					t.Errorf("request %d: %s, want %s", i, got, want)
				}
			}
			if !rs[0].Invoice.IssuedAt.Equal(rs[4].Invoice.IssuedAt) || rs[4].Invoice.Serial != rs[0].Invoice.Serial+2 {
				t.Errorf("the batch's members were not issued by one transaction: %+v, %+v", rs[0].Invoice, rs[4].Invoice)
			}
		})
	}
}
