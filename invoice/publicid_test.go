package invoice_test

import (
	"errors"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/sellers"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
	"strings"
	"testing"
	"time"
)

func TestGetByPublicIDResolvesBothForms(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	other, err := sellers.Create(ctx, f.pool, "29AAGCB7383J1Z4", "Bangalore Traders")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := invoice.Issue(ctx, f.pool, f.seller, f.s, f.draft(t, ""), now, testfactory.Options(t, series.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	route, ok := document.ParsePublicID(inv.PublicID)
	if !ok || route.SellerID != f.seller.ID {
		t.Fatalf("issued %q, routed to %+v %v; want seller %d", inv.PublicID, route, ok, f.seller.ID)
	}
	if at, _ := document.PublicIDTime(inv.PublicID); !at.Equal(inv.IssuedAt.Truncate(time.Millisecond)) {
		t.Fatalf("%q carries %v, issued at %v", inv.PublicID, at, inv.IssuedAt)
	}
	got, err := invoice.GetByPublicID(ctx, f.pool, inv.PublicID)
	if err != nil || got.ID != inv.ID {
		t.Fatalf("routed id: %+v %v", got, err)
	}
	// The same time and random bits under another seller's id are another id.
	_, random, _ := strings.Cut(inv.PublicID, "-")
	otherID := document.NewPublicID(other.ID, now)
	forged := inv.PublicID[:10] + otherID[10:strings.IndexByte(otherID, '-')+1] + random
	if _, err := invoice.GetByPublicID(ctx, f.pool, forged); !errors.Is(err, invoice.ErrNotFound) {
		t.Fatalf("another seller's prefix: %v, want not found", err)
	}

	// An invoice issued before routed ids keeps its 26-character link.
	old, err := invoice.Issue(ctx, f.pool, f.seller, f.s, f.draft(t, ""), now, testfactory.Options(t, series.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	const legacy = "k7vq2mzx3ahd4n5rbtcw6yepsg"
	if _, err := f.pool.Exec(ctx, `UPDATE invoices SET public_id = $1 WHERE id = $2`, legacy, old.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := invoice.GetByPublicID(ctx, f.pool, legacy); err != nil || got.ID != old.ID || got.PublicID != legacy {
		t.Fatalf("legacy id: %+v %v", got, err)
	}
	for _, id := range []string{"aaaaaaaaaaaaaaaaaaaaaaaaaa", document.NewPublicID(f.seller.ID, now)} {
		if _, err := invoice.GetByPublicID(ctx, f.pool, id); !errors.Is(err, invoice.ErrNotFound) {
			t.Fatalf("unknown %q: %v, want not found", id, err)
		}
	}

	// A malformed id is refused without a query: on a closed pool it is
	// still "not found", where a well-formed one reaches the pool and fails.
	closed, err := pgxpool.New(ctx, dbtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	for _, id := range []string{"nope", strings.ToUpper(legacy), "0" + inv.PublicID} {
		if _, err := invoice.GetByPublicID(ctx, closed, id); !errors.Is(err, invoice.ErrNotFound) {
			t.Fatalf("malformed %q: %v, want not found without the database", id, err)
		}
	}
	for _, id := range []string{legacy, inv.PublicID} {
		if _, err := invoice.GetByPublicID(ctx, closed, id); err == nil || errors.Is(err, invoice.ErrNotFound) {
			t.Fatalf("well-formed %q on a closed pool: %v, want a database error", id, err)
		}
	}
}

// After the contract step drops the random unique index over every id,
// both forms are still index lookups: a routed id through the unique
// index of routed ids, (public_id, seller_id), a legacy one through the
// partial index of legacy ids; neither holds the other form's rows.
func TestPublicIDLookupsNeedNoGlobalIndex(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	if _, err := f.pool.Exec(ctx, `ALTER TABLE invoices DROP CONSTRAINT IF EXISTS invoices_public_id_key`); err != nil {
		t.Fatal(err)
	}
	inv, err := invoice.Issue(ctx, f.pool, f.seller, f.s, f.draft(t, ""), now, testfactory.Options(t, series.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		`EXPLAIN SELECT id FROM invoices WHERE seller_id = 1 AND public_id = 'x' AND length(public_id) > 26`:        "invoices_routed_public_id_key",
		`EXPLAIN SELECT id FROM invoices WHERE public_id = 'abcdefghijklmnopqrstuvwxyz' AND length(public_id) = 26`: "invoices_legacy_public_id",
	} {
		var plan strings.Builder
		rows, err := tx.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		if !strings.Contains(plan.String(), want) || strings.Contains(plan.String(), "Seq Scan") {
			t.Fatalf("%s:\n%s\nwant a scan of %s", q, plan.String(), want)
		}
	}
	if dbtest.Citus(t) {
		// The scans run on the workers, whose counters this session
		// cannot read; the plans above are the workers' (Citus shows the
		// task's plan), and they name the index.
		return
	}
	// GetByPublicID's own query, not only the shapes above: this
	// transaction's counters show it scanned the index of routed ids and
	// never read invoices whole.
	scans := func() (seq, routed int64) {
		t.Helper()
		if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_numscans('invoices'::regclass),
			pg_stat_get_xact_numscans('invoices_routed_public_id_key'::regclass)`).Scan(&seq, &routed); err != nil {
			t.Fatal(err)
		}
		return seq, routed
	}
	seq0, routed0 := scans()
	if got, err := invoice.GetByPublicID(ctx, tx, inv.PublicID); err != nil || got.ID != inv.ID {
		t.Fatalf("routed id without the global index: %v", err)
	}
	if seq, routed := scans(); seq != seq0 || routed != routed0+1 {
		t.Fatalf("GetByPublicID of a routed id: %d sequential scans of invoices, %d scans of invoices_routed_public_id_key; want 0 and 1",
			seq-seq0, routed-routed0)
	}
}
