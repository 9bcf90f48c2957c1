package invoice_test

import (
	"errors"
	"testing"

	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
)

// TestIdempotencyKeysAreTheSellers: an Idempotency-Key is scoped to its
// seller (docs/api.md). Seller B's first use of a key string seller A used
// is a fresh key, not a replay or a reuse (which would also tell B that A
// used it), and is issued; and a key A holds in a running transaction does
// not hold B's key of the same name.
func TestIdempotencyKeysAreTheSellers(t *testing.T) {
	t.Parallel()
	a := setup(t)
	ctx := t.Context()
	bSeller := testfactory.Seller(t, a.pool, &testfactory.SellerOpts{GSTIN: testfactory.GSTIN(t, "29AABCR1718E1Z"), Name: "Other Traders"})
	b := fixture{pool: a.pool, seller: bSeller, s: testfactory.Series(t, a.pool, bSeller, nil)}
	opt := testfactory.Options(t, series.Options{})
	for _, key := range []string{"order-1", "order-2"} {
		if _, err := invoice.Issue(ctx, a.pool, a.seller, a.s, a.draft(t, key), now, opt); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(f fixture, key string) (int64, error) {
		tx, err := f.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		return invoice.ClaimKey(ctx, tx, f.seller.ID, key, []byte("h-b-"+key))
	}
	for _, key := range []string{"order-1", "order-2"} {
		if id, err := claim(b, key); id != 0 || err != nil {
			t.Fatalf("seller B claims %q, which seller A used: %d, %v; want a fresh key", key, id, err)
		}
	}
	for i, key := range []string{"order-1", "order-2"} {
		inv, err := invoice.Issue(ctx, b.pool, b.seller, b.s, b.draft(t, key), now, opt)
		if err != nil || inv.SellerID != b.seller.ID || inv.Serial != int64(i+1) {
			t.Fatalf("seller B issues with key %q: %+v, %v; want its serial %d", key, inv, err, i+1)
		}
	}

	// A's key held by a running transaction does not hold B's.
	holder, err := a.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if id, err := invoice.ClaimKey(ctx, holder, a.seller.ID, "order-3", []byte("h-order-3")); id != 0 || err != nil {
		t.Fatal(id, err)
	}
	if _, err := claim(a, "order-3"); !errors.Is(err, invoice.ErrKeyInProgress) {
		t.Fatalf("seller A's own key while held: %v, want ErrKeyInProgress", err)
	}
	if id, err := claim(b, "order-3"); id != 0 || err != nil {
		t.Fatalf("seller B claims %q while seller A holds its own: %d, %v; want a fresh key", "order-3", id, err)
	}
	if _, err := invoice.Issue(ctx, b.pool, b.seller, b.s, b.draft(t, "order-3"), now, opt); err != nil {
		t.Fatalf("seller B issues with %q while seller A holds its own: %v", "order-3", err)
	}
}
