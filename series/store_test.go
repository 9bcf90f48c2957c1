package series_test

import (
	"context"
	"errors"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/sellers"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"
)

type fixture struct {
	pool   *pgxpool.Pool
	seller gst.Seller
}

func setup(t *testing.T) fixture {
	t.Helper()
	pool := dbtest.New(t)
	ctx := t.Context()
	seller := testfactory.Seller(t, pool, nil)
	// A scratch table standing in for the caller's invoices: committed
	// serials land here in the same transaction as the allocation.
	if _, err := pool.Exec(ctx, `CREATE TABLE allocs (series_id bigint, fy int, serial bigint, PRIMARY KEY (series_id, fy, serial))`); err != nil {
		t.Fatal(err)
	}
	return fixture{pool: pool, seller: seller}
}

func (f fixture) series(t *testing.T, code, format string) gst.Series {
	t.Helper()
	return testfactory.Series(t, f.pool, f.seller, &testfactory.SeriesOpts{Code: code, DocType: "invoice", Format: format, Shop: "stall"})
}

func date(s string) time.Time {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return d
}

var t0 = time.Date(2026, 11, 29, 3, 20, 0, 0, time.UTC)

// allocate takes one number with opt and records it in allocs, committing
// unless rollback is set. It returns the serial taken.
func allocate(ctx context.Context, pool *pgxpool.Pool, s gst.Series, d time.Time, rollback bool, opt series.Options) (int64, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	b, err := series.Next(ctx, tx, s, d, t0, opt)
	if err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO allocs VALUES ($1, $2, $3)`, s.ID, int(b.FY), b.First); err != nil {
		return 0, err
	}
	if rollback {
		return b.First, tx.Rollback(ctx)
	}
	return b.First, tx.Commit(ctx)
}

func committed(t *testing.T, pool *pgxpool.Pool, s gst.Series, fy gst.FY) []int64 {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT serial FROM allocs WHERE series_id = $1 AND fy = $2 ORDER BY serial`, s.ID, int(fy))
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// contiguous fails unless serials are exactly 1..n.
func contiguous(t *testing.T, serials []int64, n int) {
	t.Helper()
	if len(serials) != n {
		t.Fatalf("got %d serials, want %d", len(serials), n)
	}
	for i, s := range serials {
		if s != int64(i+1) {
			t.Fatalf("serial at position %d is %d, want %d (gap or duplicate)", i, s, i+1)
		}
	}
}

func TestConcurrentAllocationsWithRollbacksAreGapFree(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := f.series(t, "CH1", "CH1/{FY}/{SEQ:5}")
	ctx := t.Context()
	opt := testfactory.Options(t, series.Options{LockTimeout: 10 * time.Second})
	const workers, each = 32, 200
	var (
		mu         sync.Mutex
		ok         []int64
		rolledBack []int64
	)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range each {
				rb := rng.IntN(5) == 0
				serial, err := allocate(ctx, f.pool, s, date("2026-11-29"), rb, opt)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if rb {
					rolledBack = append(rolledBack, serial)
				} else {
					ok = append(ok, serial)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("allocation failed: %v", err)
	}
	stored := committed(t, f.pool, s, 2026)
	contiguous(t, stored, len(ok))
	sort.Slice(ok, func(i, j int) bool { return ok[i] < ok[j] })
	contiguous(t, ok, len(ok))
	if len(rolledBack) == 0 {
		t.Fatal("no transaction was rolled back; the test proves nothing")
	}
	// Every rolled-back number below the top was taken again by a later
	// transaction: that is what keeps the committed serials contiguous.
	reissued := 0
	for _, r := range rolledBack {
		if r <= int64(len(ok)) {
			reissued++
		}
	}
	if reissued == 0 {
		t.Fatalf("none of %d rolled-back numbers was reissued", len(rolledBack))
	}
	u, err := series.Counter(ctx, f.pool, s.SellerID, s.ID, 2026)
	if err != nil {
		t.Fatal(err)
	}
	if u.LastSerial != int64(len(ok)) {
		t.Fatalf("counter at %d, want %d", u.LastSerial, len(ok))
	}
	t.Logf("%d committed, %d rolled back (%d of them reissued)", len(ok), len(rolledBack), reissued)
}

func TestConcurrentFirstUseOfAYear(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := f.series(t, "CH1", "CH1/{FY}/{SEQ:5}")
	ctx := t.Context()
	opt := testfactory.Options(t, series.Options{LockTimeout: 10 * time.Second})
	const n = 24
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if _, err := allocate(ctx, f.pool, s, date("2027-04-01"), false, opt); err != nil {
				errs <- err
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("first use failed: %v", err)
	}
	contiguous(t, committed(t, f.pool, s, 2027), n)
}

func TestSeriesDoNotBlockEachOther(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a := f.series(t, "A", "A/{FY}/{SEQ}")
	b := f.series(t, "B", "B/{FY}/{SEQ}")
	ctx := t.Context()
	opt := testfactory.Options(t, series.Options{LockTimeout: 10 * time.Second})

	// A library user holds A's counter lock and does not finish.
	holder, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := series.Next(ctx, holder, a, date("2026-11-29"), t0, testfactory.Options(t, series.Options{})); err != nil {
		t.Fatal(err)
	}

	// B is not affected.
	done := make(chan error, 1)
	go func() {
		_, err := allocate(ctx, f.pool, b, date("2026-11-29"), false, opt)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("series B waited on series A's lock")
	}

	// A waits at most its lock timeout, then answers busy.
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	began := time.Now()
	_, err = series.Next(ctx, tx, a, date("2026-11-29"), t0, testfactory.Options(t, series.Options{LockTimeout: 200 * time.Millisecond}))
	if !errors.Is(err, series.ErrLockTimeout) {
		t.Fatalf("got %v, want ErrLockTimeout", err)
	}
	if waited := time.Since(began); waited > 3*time.Second {
		t.Fatalf("waited %v for a 200ms lock timeout", waited)
	}

	// The holder rolls back: its number is returned and A carries on at 1.
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	serial, err := allocate(ctx, f.pool, a, date("2026-11-29"), false, opt)
	if err != nil || serial != 1 {
		t.Fatalf("after rollback got serial %d, %v; want 1", serial, err)
	}
}

func TestLockTimeoutIsRestoredForTheRestOfTheTransaction(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := f.series(t, "A", "A{SEQ}")
	ctx := t.Context()
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// On Citus (Options.Routed) the restore is SET LOCAL … TO DEFAULT,
	// which the coordinator passes on to the workers: the transaction gets
	// the session's value back, not a SET LOCAL of its own
	// (series.QueueLockTimeout).
	want := "7s"
	if dbtest.Citus(t) {
		if err := tx.QueryRow(ctx, `SHOW lock_timeout`).Scan(&want); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '7s'`); err != nil {
		t.Fatal(err)
	}
	if _, err := series.Next(ctx, tx, s, date("2026-11-29"), t0, testfactory.Options(t, series.Options{LockTimeout: time.Second})); err != nil {
		t.Fatal(err)
	}
	var lt string
	if err := tx.QueryRow(ctx, `SHOW lock_timeout`).Scan(&lt); err != nil {
		t.Fatal(err)
	}
	if lt != want {
		t.Fatalf("lock_timeout after Next is %q, want %s (the caller's; on Citus the session's)", lt, want)
	}
}

func TestFinancialYearTurnover(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := f.series(t, "CH1", "CH1/{FY}/{SEQ:5}")
	ctx := t.Context()
	for _, c := range []struct {
		date   string
		fy     gst.FY
		serial int64
		number string
	}{
		{"2026-03-30", 2025, 1, "CH1/25-26/00001"},
		{"2026-03-31", 2025, 2, "CH1/25-26/00002"},
		{"2026-04-01", 2026, 1, "CH1/26-27/00001"},
		{"2026-04-01", 2026, 2, "CH1/26-27/00002"},
	} {
		tx, err := f.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := series.Next(ctx, tx, s, date(c.date), t0, testfactory.Options(t, series.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if b.FY != c.fy || b.First != c.serial || b.Number(0) != c.number {
			t.Fatalf("%s: got %s serial %d %q, want %s %d %q", c.date, b.FY, b.First, b.Number(0), c.fy, c.serial, c.number)
		}
	}
	// The instant 2026-03-31T18:30:00Z is already 1 April in IST.
	if got := gst.FYOf(gst.DateIST(time.Date(2026, 3, 31, 18, 30, 0, 0, time.UTC))); got != 2026 {
		t.Fatalf("FY at IST midnight = %s, want 2026-27", got)
	}
	if got := gst.FYOf(gst.DateIST(time.Date(2026, 3, 31, 18, 29, 59, 0, time.UTC))); got != 2025 {
		t.Fatalf("FY a second before IST midnight = %s, want 2025-26", got)
	}
}

func TestDateOrderAndIssueTimeWithinASeriesYear(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := f.series(t, "CH1", "CH1/{FY}/{SEQ:5}")
	ctx := t.Context()
	next := func(d string, now time.Time) (series.Block, error) {
		tx, err := f.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		b, err := series.Next(ctx, tx, s, date(d), now, testfactory.Options(t, series.Options{}))
		if err != nil {
			return b, err
		}
		return b, tx.Commit(ctx)
	}
	b1, err := next("2026-11-29", t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := next("2026-11-28", t0); !errors.Is(err, series.ErrDateOutOfOrder) {
		t.Fatalf("earlier date: got %v, want ErrDateOutOfOrder", err)
	}
	// Same day is fine, and the clock jumping back an hour does not move
	// the issue time backwards.
	b2, err := next("2026-11-29", t0.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if b2.First != 2 {
		t.Fatalf("refused date consumed a number: next serial is %d, want 2", b2.First)
	}
	if b2.IssuedAt.Before(b1.IssuedAt) {
		t.Fatalf("issue time went backwards: %v after %v", b2.IssuedAt, b1.IssuedAt)
	}
	// A later date in another year is independent.
	if b, err := next("2027-04-01", t0); err != nil || b.First != 1 {
		t.Fatalf("new year: %v, %v", b.First, err)
	}
}

func TestExhaustedSeriesNeverWraps(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s := f.series(t, "X", "X{SEQ:1}")
	ctx := t.Context()
	take := func(n int) (series.Block, error) {
		tx, err := f.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		b, err := series.NextN(ctx, tx, s, date("2026-11-29"), t0, n, testfactory.Options(t, series.Options{}))
		if err != nil {
			return b, err
		}
		return b, tx.Commit(ctx)
	}
	b, err := take(8)
	if err != nil || b.First != 1 || b.Number(7) != "X8" {
		t.Fatalf("first block: %+v, %v", b, err)
	}
	if _, err := take(2); !errors.Is(err, gst.ErrExhausted) {
		t.Fatalf("2 more of 1 left: got %v, want ErrExhausted", err)
	}
	if b, err := take(1); err != nil || b.Number(0) != "X9" {
		t.Fatalf("last number: %v, %v", b.Number(0), err)
	}
	if _, err := take(1); !errors.Is(err, gst.ErrExhausted) {
		t.Fatalf("past capacity: got %v, want ErrExhausted", err)
	}
	if _, err := take(10); !errors.Is(err, gst.ErrExhausted) {
		t.Fatalf("more than capacity: got %v, want ErrExhausted", err)
	}
}

func TestCreateSeriesRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.series(t, "CH1", "CH1/{FY}/{SEQ:5}")
	ctx := t.Context()
	for _, c := range []struct {
		name string
		n    series.NewSeries
		want error
	}{
		{"duplicate code", series.NewSeries{Code: "ch1", DocType: "invoice", Format: "Z{SEQ}"}, series.ErrDuplicateCode},
		{"overlapping format", series.NewSeries{Code: "CH2", DocType: "invoice", Format: "CH1/{FY}/{SEQ}"}, series.ErrOverlap},
		{"too long", series.NewSeries{Code: "L", DocType: "invoice", Format: "ABCDEFGHIJ/{FY}/{SEQ:5}"}, gst.ErrInvalidFormat},
		{"leading zero", series.NewSeries{Code: "Z", DocType: "invoice", Format: "{SEQ:5}"}, gst.ErrInvalidFormat},
		{"unknown doc type", series.NewSeries{Code: "D", DocType: "quote", Format: "D{SEQ}"}, gst.ErrInvalidDocType},
		{"bad code", series.NewSeries{Code: "a b", DocType: "invoice", Format: "D{SEQ}"}, gst.ErrInvalidSeries},
	} {
		c.n.SellerID = f.seller.ID
		if _, err := series.CreateSeries(ctx, f.pool, c.n); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	c := series.NewSeries{SellerID: f.seller.ID + 1000, Code: "N", DocType: "invoice", Format: "N{SEQ}"}
	if _, err := series.CreateSeries(ctx, f.pool, c); !errors.Is(err, sellers.ErrNotFound) {
		t.Errorf("unknown seller: got %v", err)
	}
}

func TestConcurrentCreationOfOverlappingSeries(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	formats := []string{"A{SEQ}", "A1{SEQ}", "A11{SEQ}", "A{SEQ}1"} // every pair overlaps
	var wg sync.WaitGroup
	results := make([]error, len(formats))
	for i, fm := range formats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[i] = series.CreateSeries(ctx, f.pool, series.NewSeries{
				SellerID: f.seller.ID, Code: string(rune('P' + i)), DocType: "invoice", Format: fm,
			})
		}()
	}
	wg.Wait()
	created := 0
	for _, err := range results {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, series.ErrOverlap):
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if created != 1 {
		t.Fatalf("%d mutually overlapping series were created, want exactly 1", created)
	}
}

func TestSellers(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	if _, err := sellers.Create(ctx, pool, "01AABCE2207R1Z5", "Bad"); !errors.Is(err, gst.ErrInvalidGSTIN) {
		t.Fatalf("bad check character: got %v", err)
	}
	s, err := sellers.Create(ctx, pool, "29aagcb7383j1z4", "Bangalore Traders")
	if err != nil {
		t.Fatal(err)
	}
	if s.GSTIN != "29AAGCB7383J1Z4" || s.StateCode != "29" {
		t.Fatalf("got %+v", s)
	}
	if _, err := sellers.Create(ctx, pool, "29AAGCB7383J1Z4", "Again"); !errors.Is(err, sellers.ErrExists) {
		t.Fatalf("duplicate: got %v", err)
	}
	got, err := sellers.ByGSTIN(ctx, pool, "29AAGCB7383J1Z4")
	if err != nil || got.ID != s.ID {
		t.Fatalf("lookup: %+v %v", got, err)
	}
	if _, err := sellers.ByGSTIN(ctx, pool, "27AAPFU0939F1ZV"); !errors.Is(err, sellers.ErrNotFound) {
		t.Fatalf("unknown: got %v", err)
	}
}

// TestAdvanceChecksThePrediction: a block predicted from the state the last
// transaction left is taken in one write; once another transaction has
// moved the row, the same prediction fails with ErrMoved and takes nothing.
func TestAdvanceChecksThePrediction(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	s := f.series(t, "P1", "P1/{FY}/{SEQ:4}")
	d := date("2026-11-29")
	now := time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC)
	advance := func(st series.State, n int) error {
		t.Helper()
		b, ok := series.Predict(series.Take{Series: s, Date: d, N: n}, st, now)
		if !ok {
			t.Fatalf("prediction refused from %+v", st)
		}
		tx, err := f.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		batch := &pgx.Batch{}
		series.QueueAdvance(batch, []series.Advance{{Block: b, After: b.After(d, st.ChainLength, st.ChainHead)}},
			testfactory.Options(t, series.Options{LockTimeout: time.Second}))
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}

	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := series.NextN(ctx, tx, s, d, now, 3, testfactory.Options(t, series.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	st := b.After(d, b.ChainLength, b.ChainHead)
	if err := advance(st, 2); err != nil {
		t.Fatalf("prediction from the committed state: %v", err)
	}
	if u, err := series.Counter(ctx, f.pool, s.SellerID, s.ID, gst.FYOf(d)); err != nil || u.LastSerial != 5 {
		t.Fatalf("after the predicted block: %+v, %v; want last serial 5", u, err)
	}
	// The same state again is stale now.
	if err := advance(st, 2); !series.IsMoved(err) {
		t.Fatalf("stale prediction: %v, want ErrMoved", err)
	}
	if u, err := series.Counter(ctx, f.pool, s.SellerID, s.ID, gst.FYOf(d)); err != nil || u.LastSerial != 5 {
		t.Fatalf("after the stale prediction: %+v, %v; want last serial still 5", u, err)
	}
	// A date before the row's last date, or more numbers than are left,
	// is not predicted: only NextMany words those refusals.
	if _, ok := series.Predict(series.Take{Series: s, Date: d.AddDate(0, 0, -1), N: 1}, st, now); ok {
		t.Fatal("predicted a date out of order")
	}
	if _, ok := series.Predict(series.Take{Series: s, Date: d, N: 9999}, st, now); ok {
		t.Fatal("predicted past the format's capacity")
	}
}

// TestGetByIDNamesTheSeller: a series is found by its id only under its
// own seller; another seller asking for it gets ErrNotFound, as for an id
// that does not exist.
func TestGetByIDNamesTheSeller(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	s := f.series(t, "G1", "G1/{FY}/{SEQ:4}")
	got, err := series.GetByID(ctx, f.pool, f.seller.ID, s.ID)
	if err != nil || got.ID != s.ID || got.Code != "G1" {
		t.Fatalf("own seller: %+v, %v", got, err)
	}
	other := testfactory.Seller(t, f.pool, &testfactory.SellerOpts{GSTIN: "29AAGCB7383J1Z4"})
	if _, err := series.GetByID(ctx, f.pool, other.ID, s.ID); !errors.Is(err, series.ErrNotFound) {
		t.Fatalf("another seller's series: got %v, want ErrNotFound", err)
	}
	if _, err := series.GetByID(ctx, f.pool, f.seller.ID, s.ID+1000); !errors.Is(err, series.ErrNotFound) {
		t.Fatalf("unknown id: got %v, want ErrNotFound", err)
	}
}
