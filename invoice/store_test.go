package invoice_test

import (
	"errors"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
)

type fixture struct {
	pool   *pgxpool.Pool
	seller gst.Seller
	s      gst.Series
}

func setup(t *testing.T) fixture {
	t.Helper()
	pool := dbtest.New(t)
	sel := testfactory.Seller(t, pool, nil)
	return fixture{pool: pool, seller: sel, s: testfactory.Series(t, pool, sel, nil)}
}

func (f fixture) draft(t *testing.T, key string) document.Draft {
	t.Helper()
	return testfactory.Draft(t, f.seller, f.s, now, &testfactory.DraftOpts{Key: key})
}

func TestIssueBatchTakesConsecutiveNumbersAndChains(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	first, err := invoice.Issue(ctx, f.pool, f.seller, f.s, f.draft(t, ""), now, testfactory.Options(t, series.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) // a failure must not leave it holding a connection: the pool's Close would wait forever
	drafts := []document.Draft{f.draft(t, "a"), f.draft(t, "b"), f.draft(t, ""), f.draft(t, "c")}
	invs, err := invoice.IssueTx(ctx, tx, f.seller, f.s, drafts, now, testfactory.Options(t, series.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if first.Number != "CH1/26-27/00001" {
		t.Fatalf("first number %s", first.Number)
	}
	for i, inv := range invs {
		if want := int64(i + 2); inv.Serial != want {
			t.Fatalf("batch member %d got serial %d, want %d", i, inv.Serial, want)
		}
	}
	got, err := invoice.Get(ctx, f.pool, f.seller.ID, invs[3].ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Number != "CH1/26-27/00005" || got.Totals.Total.StringFixed(2) != "21.00" || got.Buyer.GSTIN != "29AAGCB7383J1Z4" || len(got.Items) != 1 {
		t.Fatalf("stored invoice differs: %+v", got)
	}
	if _, err := invoice.Get(ctx, f.pool, f.seller.ID+1, invs[3].ID); !errors.Is(err, invoice.ErrNotFound) {
		t.Fatalf("another seller's read: %v", err)
	}
	// The chain: five issue records whose hashes recompute from the rows.
	rows, err := f.pool.Query(ctx, `SELECT position, serial, hash FROM chain_records WHERE series_id = $1 ORDER BY position`, f.s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var prev []byte
	n := 0
	for rows.Next() {
		var pos, serial int64
		var hash []byte
		if err := rows.Scan(&pos, &serial, &hash); err != nil {
			t.Fatal(err)
		}
		n++
		inv, err := invoice.List(ctx, f.pool, f.s, 2026, serial-1, 1)
		if err != nil || len(inv) != 1 {
			t.Fatalf("invoice %d: %v", serial, err)
		}
		want := document.IssueRecord(string(f.seller.GSTIN), inv[0], pos, prev).Hash()
		if string(want) != string(hash) {
			t.Fatalf("record %d does not recompute from its invoice", pos)
		}
		prev = hash
	}
	if n != 5 {
		t.Fatalf("%d chain records, want 5", n)
	}
	var head []byte
	var length int64
	if err := f.pool.QueryRow(ctx, `SELECT chain_length, chain_head FROM series_counters WHERE series_id = $1`, f.s.ID).Scan(&length, &head); err != nil {
		t.Fatal(err)
	}
	if length != 5 || string(head) != string(prev) {
		t.Fatalf("counter chain state %d/%x, want 5/%x", length, head, prev)
	}
}

func TestRolledBackBatchReturnsAllItsNumbers(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := invoice.IssueTx(ctx, tx, f.seller, f.s, []document.Draft{f.draft(t, "x"), f.draft(t, "y")}, now, testfactory.Options(t, series.Options{})); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	inv, err := invoice.Issue(ctx, f.pool, f.seller, f.s, f.draft(t, "x"), now, testfactory.Options(t, series.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if inv.Serial != 1 {
		t.Fatalf("after a rolled-back batch the next serial is %d, want 1", inv.Serial)
	}
}

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	inv, err := invoice.Issue(ctx, f.pool, f.seller, f.s, f.draft(t, "k1"), now, testfactory.Options(t, series.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	claim := func(key string, hash []byte) (int64, error) {
		tx, err := f.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		return invoice.ClaimKey(ctx, tx, f.seller.ID, key, hash)
	}
	if id, err := claim("k1", []byte("h-k1")); err != nil || id != inv.ID {
		t.Fatalf("replay: %d, %v; want %d", id, err, inv.ID)
	}
	if _, err := claim("k1", []byte("other")); !errors.Is(err, invoice.ErrKeyReused) {
		t.Fatalf("reuse: %v", err)
	}
	if id, err := claim("k2", []byte("h-k2")); err != nil || id != 0 {
		t.Fatalf("fresh key: %d, %v", id, err)
	}
	// While one transaction holds a key, another is told it is in progress.
	holder, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := invoice.ClaimKey(ctx, holder, f.seller.ID, "k3", []byte("h")); err != nil {
		t.Fatal(err)
	}
	if _, err := claim("k3", []byte("h")); !errors.Is(err, invoice.ErrKeyInProgress) {
		t.Fatalf("in progress: %v", err)
	}
	// Recording a key twice loses the race cleanly.
	if _, err := invoice.Issue(ctx, f.pool, f.seller, f.s, f.draft(t, "k1"), now, testfactory.Options(t, series.Options{})); !errors.Is(err, invoice.ErrKeyRace) {
		t.Fatalf("duplicate key record: %v", err)
	}
	if n, err := invoice.PurgeKeys(ctx, f.pool, time.Now().Add(time.Hour), 0); err != nil || n != 1 {
		t.Fatalf("purge: %d, %v", n, err)
	}
	next, err := invoice.Issue(ctx, f.pool, f.seller, f.s, f.draft(t, ""), now, testfactory.Options(t, series.Options{}))
	if err != nil || next.Serial != 2 {
		t.Fatalf("the lost race consumed a number: next serial %d, %v", next.Serial, err)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	inv, err := invoice.Issue(ctx, f.pool, f.seller, f.s, f.draft(t, ""), now, testfactory.Options(t, series.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Hour)
	if _, err := invoice.Cancel(ctx, f.pool, f.seller, inv.ID, "", later, testfactory.Options(t, series.Options{})); !errors.Is(err, document.ErrInvalid) {
		t.Fatalf("empty reason: %v", err)
	}
	c, err := invoice.Cancel(ctx, f.pool, f.seller, inv.ID, "customer returned the cup", later, testfactory.Options(t, series.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != document.StatusCancelled || c.CancelReason != "customer returned the cup" || !c.CancelledAt.Equal(later) {
		t.Fatalf("cancelled: %+v", c)
	}
	if _, err := invoice.Cancel(ctx, f.pool, f.seller, inv.ID, "again", later, testfactory.Options(t, series.Options{})); !errors.Is(err, invoice.ErrAlreadyCancelled) {
		t.Fatalf("second cancel: %v", err)
	}
	if _, err := invoice.Cancel(ctx, f.pool, gst.Seller{ID: f.seller.ID + 1}, inv.ID, "x", later, testfactory.Options(t, series.Options{})); !errors.Is(err, invoice.ErrNotFound) {
		t.Fatalf("another seller's cancel: %v", err)
	}
	next, err := invoice.Issue(ctx, f.pool, f.seller, f.s, f.draft(t, ""), later, testfactory.Options(t, series.Options{}))
	if err != nil || next.Serial != 2 {
		t.Fatalf("after a cancel the next serial is %d (%v), want 2: the cancelled number stays used", next.Serial, err)
	}
	var kinds []string
	rows, _ := f.pool.Query(ctx, `SELECT kind FROM chain_records WHERE series_id = $1 ORDER BY position`, f.s.ID)
	for rows.Next() {
		var k string
		rows.Scan(&k)
		kinds = append(kinds, k)
	}
	if len(kinds) != 3 || kinds[1] != "cancel" {
		t.Fatalf("chain kinds %v, want issue, cancel, issue", kinds)
	}
}
