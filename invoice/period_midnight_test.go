package invoice_test

import (
	"errors"
	"fmt"
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
	dbNow, lastSecond, lastDay, month := lastMonthByTheDatabase(t, f)
	draft := func() document.Draft { return draftOn(t, f, lastDay, lastSecond) }
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
	waitingForLocks(t, f, 2, "the batch and the cancellation to wait for the counter row")

	// Midnight has passed by the database's clock: the month is locked.
	if _, created, err := invoice.LockPeriod(ctx, f.pool, f.seller, month, "test", dbNow); err != nil || !created {
		t.Fatalf("lock %s while the batch waits: %v, %v", month, created, err)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	refusedPeriodLocked(t, map[string]chan error{"issue": issued, "cancel": cancelled},
		"dated %s, started at 23:59:59 IST, after %s was locked while it waited", lastDay.Format(time.DateOnly), month)
	var n int
	var status string
	if err := f.pool.QueryRow(ctx, `SELECT count(*), min(status) FILTER (WHERE id = $2) FROM invoices WHERE seller_id = $1`, f.seller.ID, first.ID).Scan(&n, &status); err != nil {
		t.Fatal(err)
	}
	if n != 1 || status != string(document.StatusIssued) {
		t.Fatalf("%d invoices in the locked month (want 1), the first %s (want issued)", n, status)
	}
}

// lastMonthByTheDatabase returns the database's clock now, the last second
// (23:59:59 IST) of the month before its month, that second's date and
// month: a month that has ended by the database's clock, and a process
// clock at which it has not. Period tests that need a month the database
// considers ended choose it this way, so that they pass whatever the date.
func lastMonthByTheDatabase(t *testing.T, f fixture) (dbNow, lastSecond, lastDay time.Time, month document.Month) {
	t.Helper()
	if err := f.pool.QueryRow(t.Context(), `SELECT clock_timestamp()`).Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	ist := dbNow.In(gst.IST)
	thisMonth := time.Date(ist.Year(), ist.Month(), 1, 0, 0, 0, 0, gst.IST)
	lastSecond = thisMonth.Add(-time.Second)
	lastDay = time.Date(lastSecond.Year(), lastSecond.Month(), lastSecond.Day(), 0, 0, 0, 0, time.UTC)
	return dbNow, lastSecond, lastDay, document.MonthOf(lastDay)
}

// draftOn returns a draft of f's series dated date, prepared at now.
func draftOn(t *testing.T, f fixture, date, now time.Time) document.Draft {
	t.Helper()
	d, err := document.Prepare(document.Request{InvoiceDate: date, Items: []document.ItemInput{chai("1", "10.00", "5")}},
		f.seller, f.s, now, document.Policy{BackdateDays: 1})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// waitingForLocks waits until at least n sessions of f's database wait
// for a lock.
func waitingForLocks(t *testing.T, f fixture, n int, what string) {
	t.Helper()
	testwait.Until(t, 30*time.Second, func() bool { return dbtest.LockWaits(t, f.pool) >= n }, "%s", what)
}

// TestMonthEndGuardWaitsForALockInProgress: an invoice dated on a month's
// last day, issued (and another cancelled) at 23:59:59 IST by the process's
// clock, after the month has ended by the database's clock, while a lock of
// that month is being written (its transaction holds the seller's period
// lock and the lock row, uncommitted): both wait for it and are refused
// period_locked once it commits. The process's clock says "not backdated";
// only the guard's reading of the database's clock makes them wait, and
// without the wait they would commit into the month locked a moment later.
func TestMonthEndGuardWaitsForALockInProgress(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	_, lastSecond, lastDay, month := lastMonthByTheDatabase(t, f)
	opt := testfactory.Options(t, series.Options{LockTimeout: 30 * time.Second})
	first, err := invoice.Issue(ctx, f.pool, f.seller, f.s, draftOn(t, f, lastDay, lastSecond), lastSecond, opt)
	if err != nil {
		t.Fatal(err)
	}

	locker := lockInProgress(t, f, month.Start(), time.Time{})
	issued := make(chan error, 1)
	go func() {
		_, err := invoice.Issue(ctx, f.pool, f.seller, f.s, draftOn(t, f, lastDay, lastSecond), lastSecond, opt)
		issued <- err
	}()
	cancelled := make(chan error, 1)
	go func() {
		_, err := invoice.Cancel(ctx, f.pool, f.seller, first.ID, "typo", lastSecond, opt)
		cancelled <- err
	}()
	testwait.Until(t, 30*time.Second, func() bool {
		return len(issued) > 0 || len(cancelled) > 0 || dbtest.LockWaits(t, f.pool) >= 2
	}, "the issue and the cancellation to wait for the lock being written")
	select {
	case err := <-issued:
		t.Fatalf("an invoice dated %s, issued at 23:59:59 IST after the month ended by the database's clock, did not wait for its lock being written: %v", lastDay.Format(time.DateOnly), err)
	case err := <-cancelled:
		t.Fatalf("a cancellation of an invoice dated %s did not wait for its month's lock being written: %v", lastDay.Format(time.DateOnly), err)
	default:
	}
	if err := locker.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	refusedPeriodLocked(t, map[string]chan error{"issue": issued, "cancel": cancelled}, "dated %s after %s was locked", lastDay.Format(time.DateOnly), month)
}

// refusedPeriodLocked waits for each named result and fails the test
// unless it is ErrPeriodLocked; what (a format with args) says when.
func refusedPeriodLocked(t *testing.T, results map[string]chan error, what string, args ...any) {
	t.Helper()
	for name, ch := range results {
		select {
		case err := <-ch:
			if !errors.Is(err, invoice.ErrPeriodLocked) {
				t.Errorf("%s %s: %v, want ErrPeriodLocked", name, fmt.Sprintf(what, args...), err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s still waiting", name)
		}
	}
}

// TestLockPeriodNeedsBothClocks: only a month ended by the process's
// clock and by the database's can be locked. A process whose clock runs
// ahead of the database's (here by two months) cannot lock the database's
// current month, which the guards of invoices dated in it still consider
// open; one whose clock is behind cannot lock its own current month; the
// month before the database's locks.
func TestLockPeriodNeedsBothClocks(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	dbNow, _, _, lastMonth := lastMonthByTheDatabase(t, f)
	ahead := dbNow.AddDate(0, 2, 0)
	current := document.MonthOf(gst.DateIST(dbNow))
	if err := lockErr(t, f, current, ahead); !errors.Is(err, invoice.ErrPeriodNotEnded) {
		t.Fatalf("lock %s (the database's month) with a clock two months ahead: %v, want ErrPeriodNotEnded", current, err)
	}
	behind := dbNow.AddDate(0, -2, 0)
	behindMonth := document.MonthOf(gst.DateIST(behind))
	if err := lockErr(t, f, behindMonth, behind); !errors.Is(err, invoice.ErrPeriodNotEnded) {
		t.Fatalf("lock %s (the process's month, ended by the database's clock) with a clock two months behind: %v, want ErrPeriodNotEnded", behindMonth, err)
	}
	if _, created, err := invoice.LockPeriod(ctx, f.pool, f.seller, lastMonth, "test", ahead); err != nil || !created {
		t.Fatalf("lock %s (ended by both clocks): %v, %v", lastMonth, created, err)
	}
}

// lockErr returns the error of locking month m of f's seller at now.
func lockErr(t *testing.T, f fixture, m document.Month, now time.Time) error {
	t.Helper()
	_, _, err := invoice.LockPeriod(t.Context(), f.pool, f.seller, m, "test", now)
	return err
}
