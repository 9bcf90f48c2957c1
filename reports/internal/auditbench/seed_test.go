package main

import (
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/sellers"
	"github.com/jackc/pgx/v5"
	"testing"
	"time"
)

// TestSeedsVerify: a small database years deep and a BENCH series seed as
// the large ones do, and invoiced's own verification finds every chain,
// serial run and counter intact, with the counts asked for.
func TestSeedsVerify(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.New(t)
	l := deepLayout{sellers: 2, seriesPer: 2, years: 3, per: 250, jobs: 2}
	if err := seedDeep(ctx, pool, l, func(string) {}); err != nil {
		t.Fatal(err)
	}
	if err := seedSeries(ctx, pool, 300); err != nil {
		t.Fatal(err)
	}
	sellers, err := sellers.All(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(sellers) != l.sellers+1 {
		t.Fatalf("%d sellers, want %d", len(sellers), l.sellers+1)
	}
	seriesYears := 0
	for _, s := range sellers {
		rep, err := reports.Verify(ctx, pool, s, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() {
			t.Fatalf("%s: seeded chains do not verify: %v", s.GSTIN, rep.Findings())
		}
		for _, c := range rep.Chains {
			seriesYears++
			want := int64(l.per)
			if s.GSTIN == gstin {
				want = 300
			}
			if c.Invoices != want {
				t.Errorf("%s: a series-year holds %d invoices, want %d", s.GSTIN, c.Invoices, want)
			}
		}
	}
	if want := l.sellers*l.seriesPer*l.years + 1; seriesYears != want {
		t.Fatalf("%d series-years, want %d", seriesYears, want)
	}
	var distinct, total int
	pool.QueryRow(ctx, `SELECT count(DISTINCT public_id), count(*) FROM invoices`).Scan(&distinct, &total)
	if distinct != total {
		t.Fatalf("%d distinct public ids for %d invoices", distinct, total)
	}
	// Seeded ids are of the form issuing gives: routed to the row's seller,
	// carrying its issue time.
	rows, err := pool.Query(ctx, `SELECT seller_id, issued_at, public_id FROM invoices`)
	if err != nil {
		t.Fatal(err)
	}
	var seller int64
	var at time.Time
	var id string
	if _, err := pgx.ForEachRow(rows, []any{&seller, &at, &id}, func() error {
		route, ok := document.ParsePublicID(id)
		if got, _ := document.PublicIDTime(id); !ok || route.SellerID != seller || !got.Equal(at.Truncate(time.Millisecond)) {
			t.Fatalf("seeded public id %q of seller %d issued %v: routed %+v %v, time %v", id, seller, at, route, ok, got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
