package invoice_test

import (
	"errors"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
)

// TestNoInvoiceInAMonthLockedWhileItWaited drives the midnight interleaving
// of a backdating race without a skewed clock: a batch starts at 23:59:59
// IST on the last day of a month (its process clock, the batch's now) with
// an invoice dated that day, and a cancellation of an invoice of that day
// starts at the same instant; both wait for the series' counter row, held
// by another transaction; meanwhile the month ends by the database's clock
// and is locked; then the counter row is released. Neither may commit into
// the locked month: the guard judges "backdated" by the database's clock at
// the guarded statement, not by the batch's now. The database's real clock
// plays midnight: the test's month is the one before the database's today.
func TestNoInvoiceInAMonthLockedWhileItWaited(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	var dbNow time.Time
	if err := f.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	ist := dbNow.In(gst.IST)
	thisMonth := time.Date(ist.Year(), ist.Month(), 1, 0, 0, 0, 0, gst.IST)
	lastSecond := thisMonth.Add(-time.Second) // 23:59:59 IST on the month's last day
	lastDay := time.Date(lastSecond.Year(), lastSecond.Month(), lastSecond.Day(), 0, 0, 0, 0, time.UTC)
	month := document.MonthOf(lastDay)
	draft := func() document.Draft {
		d, err := document.Prepare(document.Request{InvoiceDate: lastDay, Items: []document.ItemInput{chai("1", "10.00", "5")}},
			f.seller, f.s, lastSecond, document.Policy{BackdateDays: 1})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	opt := testfactory.Options(t, series.Options{LockTimeout: 30 * time.Second})
	first, err := invoice.Issue(ctx, f.pool, f.seller, f.s, draft(), lastSecond, opt)
	if err != nil {
		t.Fatal(err)
	}

	holder, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `SELECT 1 FROM series_counters WHERE seller_id = $1 AND series_id = $2 FOR UPDATE`, f.seller.ID, f.s.ID); err != nil {
		t.Fatal(err)
	}
	issued := make(chan error, 1)
	go func() {
		_, err := invoice.Issue(ctx, f.pool, f.seller, f.s, draft(), lastSecond, opt)
		issued <- err
	}()
	cancelled := make(chan error, 1)
	go func() {
		_, err := invoice.Cancel(ctx, f.pool, f.seller, first.ID, "typo", lastSecond, opt)
		cancelled <- err
	}()
	// On Citus the waits are on the seller's worker: citus_lock_waits
	// lists them cluster-wide.
	waits := `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`
	if dbtest.Citus(t) {
		waits = `SELECT count(DISTINCT waiting_gpid) FROM citus_lock_waits`
	}
	testwait.Until(t, 30*time.Second, func() bool {
		var n int
		err := f.pool.QueryRow(ctx, waits).Scan(&n)
		return err == nil && n >= 2
	}, "the batch and the cancellation to wait for the counter row")

	// Midnight has passed by the database's clock: the month is locked.
	if _, created, err := invoice.LockPeriod(ctx, f.pool, f.seller, month, "test", dbNow); err != nil || !created {
		t.Fatalf("lock %s while the batch waits: %v, %v", month, created, err)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan error{"issue": issued, "cancel": cancelled} {
		select {
		case err := <-ch:
			if !errors.Is(err, invoice.ErrPeriodLocked) {
				t.Errorf("%s dated %s, started at 23:59:59 IST, after %s was locked while it waited: %v, want ErrPeriodLocked", name, lastDay.Format(time.DateOnly), month, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s still waiting", name)
		}
	}
	var n int
	var status string
	if err := f.pool.QueryRow(ctx, `SELECT count(*), min(status) FILTER (WHERE id = $2) FROM invoices WHERE seller_id = $1`, f.seller.ID, first.ID).Scan(&n, &status); err != nil {
		t.Fatal(err)
	}
	if n != 1 || status != string(document.StatusIssued) {
		t.Fatalf("%d invoices in the locked month (want 1), the first %s (want issued)", n, status)
	}
}
