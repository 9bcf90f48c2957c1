package series_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/invoiced/invoiced/series"
)

// TestNextManyLocksRowsInOrder: two transactions that take the same two
// series-years in one NextMany call each, listed in opposite orders (two
// servers batching the same series), never deadlock: NextMany locks the
// counter rows in (series, year) order, whatever the order of its takes.
// Row A is held by a third transaction while both queue for it; had the
// second locked B first, releasing A would let the first take A and then
// wait for B, held by the second, which waits for A: PostgreSQL's deadlock
// detector would abort one of them. Both forms of the statement (unnest on
// PostgreSQL, Routed VALUES on Citus) are checked.
func TestNextManyLocksRowsInOrder(t *testing.T) {
	t.Parallel()
	modes := []bool{false, true}
	if dbtest.Citus(t) {
		modes = []bool{true} // the unnest form is not what runs on Citus
	}
	for _, routed := range modes {
		t.Run(fmt.Sprintf("routed=%v", routed), func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			ctx := t.Context()
			opt := series.Options{LockTimeout: 20 * time.Second, Routed: routed}
			a := f.series(t, "A", "A/{FY}/{SEQ}")
			b := f.series(t, "B", "B/{FY}/{SEQ}")
			if a.ID >= b.ID {
				t.Fatalf("series A (id %d) should sort before B (id %d)", a.ID, b.ID)
			}
			d := date("2026-11-29")
			// The rows exist, so every wait is for a row lock.
			for _, s := range []gst.Series{a, b} {
				if _, err := allocate(ctx, f.pool, s, d, false, opt); err != nil {
					t.Fatal(err)
				}
			}

			holder, err := f.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Rollback(ctx)
			// A row lock, not an update: waiters then queue for the row in
			// turn (an update's new row version would have them wait for
			// the holder's transaction and race when it ends).
			if _, err := holder.Exec(ctx, `SELECT 1 FROM series_counters WHERE seller_id = $1 AND series_id = $2 FOR UPDATE`, f.seller.ID, a.ID); err != nil {
				t.Fatal(err)
			}

			takeBoth := func(first, second gst.Series) error {
				tx, err := f.pool.Begin(ctx)
				if err != nil {
					return err
				}
				defer tx.Rollback(context.WithoutCancel(ctx))
				_, errs, err := series.NextMany(ctx, tx, []series.Take{{Series: first, Date: d, N: 1}, {Series: second, Date: d, N: 1}}, t0, opt)
				if err != nil {
					return err
				}
				for _, e := range errs {
					if e != nil {
						return e
					}
				}
				return tx.Commit(ctx)
			}
			waiting := func(want int, what string) {
				testwait.Until(t, 30*time.Second, func() bool { return dbtest.LockWaits(t, f.pool) >= want }, "%s", what)
			}
			// [A, B] queues for A first, so A goes to it when released.
			done := make(chan error, 2)
			go func() { done <- takeBoth(a, b) }()
			waiting(1, "NextMany [A, B] to wait for row A")
			go func() { done <- takeBoth(b, a) }()
			waiting(2, "NextMany [B, A] to wait too")
			if err := holder.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("NextMany of the same two series-years in opposite orders: %v", err)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("a NextMany call is still waiting")
				}
			}
			// Each row: the first allocation and one of each NextMany.
			for _, s := range []gst.Series{a, b} {
				if u, err := series.Counter(ctx, f.pool, f.seller.ID, s.ID, 2026); err != nil || u.LastSerial != 3 {
					t.Errorf("series %s: last serial %d, %v; want 3", s.Code, u.LastSerial, err)
				}
			}
		})
	}
}

// TestSeriesCreationWaitsForAnotherInProgress: a series created while
// another creation of the seller is in progress (its transaction open)
// waits for it and is then checked against it: overlapping formats are
// refused, never both created. TestConcurrentCreationOfOverlappingSeries
// starts creations at once, which rarely overlap in time; this one holds
// the first open.
func TestSeriesCreationWaitsForAnotherInProgress(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	first, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx)
	if _, err := series.CreateSeriesTx(ctx, first, series.NewSeries{SellerID: f.seller.ID, Code: "P", DocType: "invoice", Format: "A{SEQ}"}); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		_, err := series.CreateSeries(ctx, f.pool, series.NewSeries{SellerID: f.seller.ID, Code: "Q", DocType: "invoice", Format: "A1{SEQ}"})
		second <- err
	}()
	testwait.Until(t, 30*time.Second, func() bool {
		return len(second) > 0 || dbtest.LockWaits(t, f.pool) >= 1
	}, "the second creation to wait for the first")
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-second; !errors.Is(err, series.ErrOverlap) {
		t.Fatalf("a series overlapping one created meanwhile: %v, want ErrOverlap", err)
	}
}
