package invoice_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
)

// december is the periods tests' clock: 5 December 2026, 10:00 IST, so
// November 2026 has ended and may be locked.
var december = time.Date(2026, 12, 5, 10, 0, 0, 0, gst.IST)

func dated(t *testing.T, f fixture, s gst.Series, date string) document.Draft {
	t.Helper()
	d, _ := time.Parse(time.DateOnly, date)
	draft, err := document.Prepare(document.Request{InvoiceDate: d, Items: []document.ItemInput{chai("1", "10.00", "5")}},
		f.seller, s, december, document.Policy{BackdateDays: 60})
	if err != nil {
		t.Fatal(err)
	}
	return draft
}

func lastSerial(t *testing.T, f fixture, s gst.Series) int64 {
	t.Helper()
	var n int64
	if err := f.pool.QueryRow(t.Context(), `SELECT coalesce(max(last_serial), 0) FROM series_counters WHERE series_id = $1`, s.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPeriodLock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dbtest.SetClock(t, f.pool, december) // November has ended by the database's clock too
	ctx := t.Context()
	nov := mustMonth(t, "112026")
	early, err := invoice.Issue(ctx, f.pool, f.seller, f.s, dated(t, f, f.s, "2026-11-10"), december, testfactory.Options(t, series.Options{}))
	if err != nil {
		t.Fatal(err)
	}

	// Only an ended month can be locked.
	for _, fp := range []string{"122026", "012027"} {
		if _, _, err := invoice.LockPeriod(ctx, f.pool, f.seller, mustMonth(t, fp), "test", december); !errors.Is(err, invoice.ErrPeriodNotEnded) {
			t.Fatalf("lock %s: %v, want ErrPeriodNotEnded", fp, err)
		}
	}
	lock, created, err := invoice.LockPeriod(ctx, f.pool, f.seller, nov, "key ik_test", december)
	if err != nil || !created || lock.LockedBy != "key ik_test" {
		t.Fatalf("lock November: %+v, %v, %v", lock, created, err)
	}
	if again, created, err := invoice.LockPeriod(ctx, f.pool, f.seller, nov, "other", december.Add(time.Hour)); err != nil || created || !again.LockedAt.Equal(lock.LockedAt) || again.LockedBy != "key ik_test" {
		t.Fatalf("lock again: %+v, %v, %v; want the first lock", again, created, err)
	}

	// A backdated invoice and a cancellation in November are refused, and no number is used.
	before := lastSerial(t, f, f.s)
	if _, err := invoice.Issue(ctx, f.pool, f.seller, f.s, dated(t, f, f.s, "2026-11-25"), december, testfactory.Options(t, series.Options{})); !errors.Is(err, invoice.ErrPeriodLocked) ||
		apperr.KindOf(err) != apperr.Conflict || !strings.Contains(apperr.MessageOf(err), "credit or debit note") {
		t.Fatalf("backdated issue: %v", err)
	}
	if err := invoice.CheckPeriod(ctx, f.pool, f.seller, time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), december); !errors.Is(err, invoice.ErrPeriodLocked) {
		t.Fatalf("CheckPeriod(30 Nov): %v", err)
	}
	if _, err := invoice.Cancel(ctx, f.pool, f.seller, early.ID, "typo", december, testfactory.Options(t, series.Options{})); !errors.Is(err, invoice.ErrPeriodLocked) {
		t.Fatalf("cancel in a locked month: %v", err)
	}
	if after := lastSerial(t, f, f.s); after != before {
		t.Fatalf("last_serial %d after refusals, was %d", after, before)
	}
	// December is open.
	dec, err := invoice.Issue(ctx, f.pool, f.seller, f.s, dated(t, f, f.s, "2026-12-01"), december, testfactory.Options(t, series.Options{}))
	if err != nil || dec.Serial != before+1 {
		t.Fatalf("December invoice: %+v, %v; want serial %d", dec, err, before+1)
	}
	if _, err := invoice.Cancel(ctx, f.pool, f.seller, dec.ID, "typo", december, testfactory.Options(t, series.Options{})); err != nil {
		t.Fatalf("cancel in December: %v", err)
	}

	// Unlocking needs a reason and is recorded.
	if err := invoice.UnlockPeriod(ctx, f.pool, f.seller, nov, "cli", " ", december); !errors.Is(err, document.ErrInvalid) {
		t.Fatalf("unlock without a reason: %v", err)
	}
	if err := invoice.UnlockPeriod(ctx, f.pool, f.seller, mustMonth(t, "102026"), "cli", "x", december); !errors.Is(err, invoice.ErrPeriodNotLocked) {
		t.Fatalf("unlock October: %v", err)
	}
	if err := invoice.UnlockPeriod(ctx, f.pool, f.seller, nov, "cli", "amendment of GSTR-1 in Table 9A", december.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	events, err := invoice.PeriodEvents(ctx, f.pool, f.seller.ID)
	if err != nil || len(events) != 2 || events[0].Action != "lock" || events[1].Action != "unlock" || events[1].Reason != "amendment of GSTR-1 in Table 9A" || events[1].By != "cli" {
		t.Fatalf("events %+v, %v", events, err)
	}
	if _, err := invoice.Cancel(ctx, f.pool, f.seller, early.ID, "typo", december, testfactory.Options(t, series.Options{})); err != nil {
		t.Fatalf("cancel after unlocking: %v", err)
	}
	if locks, err := invoice.PeriodLocks(ctx, f.pool, f.seller.ID); err != nil || len(locks) != 0 {
		t.Fatalf("locks after unlocking: %+v, %v", locks, err)
	}
}

func mustMonth(t *testing.T, fp string) document.Month {
	t.Helper()
	m, err := document.ParseMonth(fp)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPeriodLockRace: a lock created while backdated invoices are on
// their way in is never passed. While a transaction holds the lock being
// created (the seller's row FOR UPDATE and the lock's row written, not yet
// committed), backdated invoices wait, both alone and through a predicting
// Committer, and are refused once it commits; an invoice dated in the
// current month does not wait at all.
func TestPeriodLockRace(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	ch2, err := series.CreateSeries(ctx, f.pool, series.NewSeries{SellerID: f.seller.ID, Code: "CH2", DocType: "invoice", Format: "CH2/{FY}/{SEQ:5}"})
	if err != nil {
		t.Fatal(err)
	}
	ch3, err := series.CreateSeries(ctx, f.pool, series.NewSeries{SellerID: f.seller.ID, Code: "CH3", DocType: "invoice", Format: "CH3/{FY}/{SEQ:5}"})
	if err != nil {
		t.Fatal(err)
	}
	c := mustCommitter(invoice.NewCommitter(f.pool, testfactory.Config(t, invoice.Config{Now: func() time.Time { return december }})))
	// The Committer has written CH2's counter row, so its next batch predicts.
	if r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: ch2, Draft: dated(t, f, ch2, "2026-11-10")}); r.Err != nil {
		t.Fatal(r.Err)
	}
	before1, before2 := lastSerial(t, f, f.s), lastSerial(t, f, ch2)

	locker := lockInProgress(t, f, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), december)

	alone := make(chan error, 1)
	go func() {
		_, err := invoice.Issue(ctx, f.pool, f.seller, f.s, dated(t, f, f.s, "2026-11-20"), december, testfactory.Options(t, series.Options{LockTimeout: 30 * time.Second}))
		alone <- err
	}()
	batched := make(chan error, 1)
	go func() {
		batched <- c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: ch2, Draft: dated(t, f, ch2, "2026-11-20")}).Err
	}()

	// The current month does not wait for the lock being created.
	done := make(chan error, 1)
	go func() {
		_, err := invoice.Issue(ctx, f.pool, f.seller, ch3, dated(t, f, ch3, "2026-12-02"), december, testfactory.Options(t, series.Options{}))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("December invoice: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an invoice dated in the current month waited for a period lock being created")
	}

	// Both backdated requests are seen waiting for a lock, the one the
	// locker holds (nothing else is held), and neither has answered: an
	// event, where a 500 ms wait let one that answered later pass.
	testwait.Until(t, 30*time.Second, func() bool {
		return len(alone) > 0 || len(batched) > 0 || dbtest.LockWaits(t, f.pool) >= 2
	}, "the two backdated requests to wait for the lock being created")
	select {
	case err := <-alone:
		t.Fatalf("a backdated invoice did not wait for the lock being created: %v", err)
	case err := <-batched:
		t.Fatalf("a backdated batch did not wait for the lock being created: %v", err)
	default:
	}
	if err := locker.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	refusedPeriodLocked(t, map[string]chan error{"alone": alone, "batched": batched}, "backdated invoice after the lock committed")
	if a, b := lastSerial(t, f, f.s), lastSerial(t, f, ch2); a != before1 || b != before2 {
		t.Fatalf("numbers used by refused invoices: CH1 %d→%d, CH2 %d→%d", before1, a, before2, b)
	}
	var n int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE invoice_date = '2026-11-20'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d invoices dated in the locked month after the lock (%v)", n, err)
	}
}

func TestDeclareOpening(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	declare := func(o invoice.Opening) error {
		tx, err := f.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := invoice.DeclareOpeningTx(ctx, tx, f.seller, f.s, o, "cli", december); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	for _, o := range []invoice.Opening{
		{FY: 2026, LastSerial: 1233, LastInvoiceDate: day("2026-11-15"), LastNumber: "CH1/26-27/01232"},  // not the serial's number
		{FY: 2026, LastSerial: 99999, LastInvoiceDate: day("2026-11-15"), LastNumber: "CH1/26-27/99999"}, // the format's last: nothing left
		{FY: 2026, LastSerial: 1233, LastInvoiceDate: day("2026-12-06"), LastNumber: "CH1/26-27/01233"},  // after today
		{FY: 2026, LastSerial: 1233, LastInvoiceDate: day("2026-03-31"), LastNumber: "CH1/26-27/01233"},  // outside the year
		{FY: 2026, LastSerial: 0, LastInvoiceDate: day("2026-11-15"), LastNumber: "CH1/26-27/00000"},
	} {
		if err := declare(o); !errors.Is(err, document.ErrInvalid) {
			t.Fatalf("declare %+v: %v, want ErrInvalid", o, err)
		}
	}
	if err := declare(invoice.Opening{FY: 2026, LastSerial: 1233, LastInvoiceDate: day("2026-11-15"), LastNumber: "ch1/26-27/01233"}); err != nil {
		t.Fatal(err)
	}
	// Once declared (or once the year has an invoice), never again.
	if err := declare(invoice.Opening{FY: 2026, LastSerial: 5, LastInvoiceDate: day("2026-11-15"), LastNumber: "CH1/26-27/00005"}); !errors.Is(err, invoice.ErrOpeningTooLate) {
		t.Fatalf("declare twice: %v", err)
	}
	if _, err := invoice.Issue(ctx, f.pool, f.seller, f.s, dated(t, f, f.s, "2026-11-14"), december, testfactory.Options(t, series.Options{})); !errors.Is(err, series.ErrDateOutOfOrder) {
		t.Fatalf("an invoice dated before the last declared one: %v", err)
	}
	inv, err := invoice.Issue(ctx, f.pool, f.seller, f.s, dated(t, f, f.s, "2026-11-15"), december, testfactory.Options(t, series.Options{}))
	if err != nil || inv.Serial != 1234 || inv.Number != "CH1/26-27/01234" {
		t.Fatalf("first invoice after the opening: %+v, %v", inv, err)
	}
	o, found, err := invoice.OpeningOf(ctx, f.pool, f.s, 2026)
	if err != nil || !found || o.LastNumber != "CH1/26-27/01233" || o.DeclaredBy != "cli" {
		t.Fatalf("OpeningOf: %+v, %v, %v", o, found, err)
	}
	// A year that already has an invoice cannot be declared.
	ch9, err := series.CreateSeries(ctx, f.pool, series.NewSeries{SellerID: f.seller.ID, Code: "CH9", DocType: "invoice", Format: "CH9/{FY}/{SEQ:5}"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := invoice.Issue(ctx, f.pool, f.seller, ch9, dated(t, f, ch9, "2026-11-01"), december, testfactory.Options(t, series.Options{})); err != nil {
		t.Fatal(err)
	}
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := invoice.DeclareOpeningTx(ctx, tx, f.seller, ch9, invoice.Opening{FY: 2026, LastSerial: 5, LastInvoiceDate: day("2026-10-15"), LastNumber: "CH9/26-27/00005"}, "cli", december); !errors.Is(err, invoice.ErrOpeningTooLate) {
		t.Fatalf("declare a year with an invoice: %v", err)
	}
}

// TestPeriodLockGuardsAGroupIssuedInPart: a series with fewer numbers left
// than a batch asks issues the first ones and refuses the rest as
// exhausted; the first ones are still held to the period lock, so a
// month locked while they waited gets none of them.
func TestPeriodLockGuardsAGroupIssuedInPart(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	n9, err := series.CreateSeries(ctx, f.pool, series.NewSeries{SellerID: f.seller.ID, Code: "N9", DocType: "invoice", Format: "N9/{FY}/{SEQ:1}"})
	if err != nil {
		t.Fatal(err)
	}
	for range 7 {
		if _, err := invoice.Issue(ctx, f.pool, f.seller, n9, dated(t, f, n9, "2026-11-05"), december, testfactory.Options(t, series.Options{})); err != nil {
			t.Fatal(err)
		}
	}
	// November is locked after the five below passed any early check.
	if _, err := f.pool.Exec(ctx, `INSERT INTO period_locks (seller_id, period, locked_at, locked_by) VALUES ($1, '2026-11-01', $2, 'test')`, f.seller.ID, december); err != nil {
		t.Fatal(err)
	}
	c := mustCommitter(invoice.NewCommitter(f.pool, testfactory.Config(t, invoice.Config{Now: func() time.Time { return december }})))
	var reqs []invoice.IssueRequest
	for range 5 {
		reqs = append(reqs, invoice.IssueRequest{Seller: f.seller, Series: n9, Draft: dated(t, f, n9, "2026-11-20")})
	}
	for i, r := range c.IssueBatch(ctx, reqs) {
		if r.Err == nil || !errors.Is(r.Err, invoice.ErrPeriodLocked) && !errors.Is(r.Err, gst.ErrExhausted) {
			t.Errorf("request %d: %+v, want period_locked or exhausted", i, r)
		}
	}
	if got := lastSerial(t, f, n9); got != 7 {
		t.Fatalf("N9's last serial is %d after a batch into a locked month, want 7", got)
	}
}

// lockInProgress begins a transaction that takes the seller's period lock
// and writes the lock of the month starting at period, locked at lockedAt
// (the database's now() when zero), and returns it open: the caller
// commits it, and the test's end rolls back one left open.
func lockInProgress(t *testing.T, f fixture, period, lockedAt time.Time) pgx.Tx {
	t.Helper()
	ctx := t.Context()
	locker, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = locker.Rollback(context.Background()) })
	if err := invoice.LockPeriods(ctx, locker, f.seller.ID); err != nil {
		t.Fatal(err)
	}
	var at *time.Time
	if !lockedAt.IsZero() {
		at = &lockedAt
	}
	if _, err := locker.Exec(ctx, `INSERT INTO period_locks (seller_id, period, locked_at, locked_by) VALUES ($1, $2, COALESCE($3, now()), 'test')`, f.seller.ID, period, at); err != nil {
		t.Fatal(err)
	}
	return locker
}
