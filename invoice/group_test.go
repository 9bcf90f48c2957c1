package invoice_test

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
)

func serialsOf(t *testing.T, f fixture) []int64 {
	t.Helper()
	rows, err := f.pool.Query(t.Context(), `SELECT serial FROM invoices WHERE series_id = $1 ORDER BY serial`, f.s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for rows.Next() {
		var s int64
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// issueConcurrently issues clients×each invoices on f's series from
// clients goroutines, client w through committer(w), calling after (if
// set) with each result, and returns the serials issued, sorted.
func issueConcurrently(t *testing.T, f fixture, clients, each int, committer func(w int) *invoice.Committer, after func(invoice.Result)) []int64 {
	t.Helper()
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	for w := range clients {
		c := committer(w)
		wg.Go(func() {
			for i := range each {
				r := c.Issue(t.Context(), invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, fmt.Sprintf("w%d-%d", w, i))})
				if r.Err != nil {
					t.Errorf("issue: %v", r.Err)
					return
				}
				if after != nil {
					after(r)
				}
				mu.Lock()
				got = append(got, r.Invoice.Serial)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	return got
}

func checkContiguous(t *testing.T, serials []int64, n int) {
	t.Helper()
	if len(serials) != n {
		t.Fatalf("%d invoices stored, want %d", len(serials), n)
	}
	for i, s := range serials {
		if s != int64(i+1) {
			t.Fatalf("serial %d at position %d: gap or duplicate", s, i+1)
		}
	}
}

func TestGroupCommitUnderConcurrency(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		strategy  string
		inFlight  int
		delegated bool
	}{{"pool", 1, false}, {"pool", 2, false}, {"plain", 1, false}, {"plain", 2, false}, {"pool", 2, true}} {
		t.Run(fmt.Sprintf("%s/in-flight=%d/delegated=%v", mode.strategy, mode.inFlight, mode.delegated), func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			c := newCommitter(t, mode.strategy, f.pool, invoice.Config{InFlight: mode.inFlight,
				Now: func() time.Time { return now }, Options: series.Options{LockTimeout: 10 * time.Second}})
			if mode.delegated {
				invoice.Delegate(c)
			}
			predict := mode.strategy == "pool"
			const clients, each = 32, 40
			got := issueConcurrently(t, f, clients, each, func(int) *invoice.Committer { return c }, nil)
			checkContiguous(t, got, clients*each)
			checkContiguous(t, serialsOf(t, f), clients*each)
			st := c.Stats()
			if st.MaxBatch < 2 {
				t.Logf("no batch larger than one formed (stats %+v)", st)
			}
			if predict && (st.Predicted == 0 || st.Mispredicted != 0) {
				t.Errorf("one process alone: want predicted transactions and no misprediction, got %+v", st)
			}
			if predict && st.Predicted*2 < st.Batches {
				// Two batches in flight on one series must not keep each
				// other from being predicted (Committer.waitForRow).
				t.Errorf("want most transactions predicted, got %+v", st)
			}
			// A predicted batch is one call of invoiced_issue_rows when
			// delegated (always on Citus), never otherwise.
			if delegated := mode.delegated || (predict && dbtest.Citus(t)); (st.Delegated == st.Predicted) != delegated && st.Predicted > 0 || !delegated && st.Delegated != 0 {
				t.Errorf("delegated=%v: want every predicted transaction delegated iff so, got %+v", delegated, st)
			}
			t.Logf("stats %+v", st)
		})
	}
}

// TestGroupCommitIsolatesAFailingMember queues a batch behind a held
// counter lock with one member whose write must fail; the batch fails, its
// members are retried alone, and only the bad one fails.
func TestGroupCommitIsolatesAFailingMember(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	c := mustCommitter(invoice.NewCommitter(f.pool, testfactory.Config(t, invoice.Config{Now: func() time.Time { return now },
		Options: series.Options{LockTimeout: 30 * time.Second}})))

	holder, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx) // a no-op once rolled back; on a failed wait, frees the waiters before the pool closes
	if _, err := series.Next(ctx, holder, f.s, date(t, "2026-11-29"), now, testfactory.Options(t, series.Options{})); err != nil {
		t.Fatal(err)
	}
	const n = 12
	results := make([]invoice.Result, n)
	var wg sync.WaitGroup
	launch := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := f.draft(t, fmt.Sprintf("key-%d", i))
			if i == 7 {
				d.IdempotencyKey = "bad\x00key" // PostgreSQL text cannot hold NUL
			}
			if i == 9 {
				d.IdempotencyKey, d.RequestHash = "key-3", []byte("h-key-3") // a retry of member 3
			}
			results[i] = c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: d})
		}()
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		waitUntil(t, what, cond)
	}
	// The first request runs alone and waits on the held lock ...
	launch(0)
	waitForLockWait(t, f)
	// ... while the others queue behind it and form one batch.
	for i := 1; i < n; i++ {
		launch(i)
	}
	waitFor("the queue", func() bool { return invoice.PendingOf(c) == n-1 })
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// Members 3 and 9 share a key and a body: whichever ran first issued,
	// the other replayed it (or, in one batch, was told it is in progress).
	a, b := results[3], results[9]
	if a.Replayed || errors.Is(a.Err, invoice.ErrKeyInProgress) {
		a, b = b, a
	}
	if a.Err != nil || a.Replayed {
		t.Fatalf("neither member with the shared key issued: %+v / %+v", a, b)
	}
	if !errors.Is(b.Err, invoice.ErrKeyInProgress) && (b.Err != nil || !b.Replayed || b.Invoice.ID != a.Invoice.ID) {
		t.Fatalf("the second member with the shared key: %+v, want a replay of %d", b, a.Invoice.ID)
	}
	for i, r := range results {
		switch {
		case i == 7 && r.Err == nil:
			t.Fatal("the member with the unstorable key succeeded")
		case i == 7 || i == 3 || i == 9:
		case r.Err != nil:
			t.Fatalf("member %d failed: %v", i, r.Err)
		}
	}
	checkContiguous(t, serialsOf(t, f), n-2)
	st := c.Stats()
	if st.MaxBatch < 2 || st.Retries < 1 {
		t.Fatalf("stats %+v: want a batch of several members that was retried", st)
	}
}

func TestGroupCommitReplaysAcrossBatches(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	c := mustCommitter(invoice.NewCommitter(f.pool, testfactory.Config(t, invoice.Config{Now: func() time.Time { return now }})))
	first := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, "same")})
	if first.Err != nil {
		t.Fatal(first.Err)
	}
	var wg sync.WaitGroup
	results := make([]invoice.Result, 16)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, "same")})
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.Err != nil || !r.Replayed || r.Invoice.ID != first.Invoice.ID {
			t.Fatalf("retry %d: %+v", i, r)
		}
	}
	other := f.draft(t, "same")
	other.RequestHash = []byte("different body")
	if r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: other}); !errors.Is(r.Err, invoice.ErrKeyReused) {
		t.Fatalf("reuse: %v", r.Err)
	}
	checkContiguous(t, serialsOf(t, f), 1)
}

func date(t *testing.T, s string) time.Time {
	t.Helper()
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// moreSeries creates n more series S0..S(n-1) for f's seller.
func (f fixture) moreSeries(t *testing.T, n int) []gst.Series {
	t.Helper()
	out := make([]gst.Series, n)
	for i := range n {
		s, err := series.CreateSeries(t.Context(), f.pool, series.NewSeries{
			SellerID: f.seller.ID, Code: fmt.Sprintf("S%d", i), DocType: "invoice", Format: fmt.Sprintf("S%d/{FY}/{SEQ:6}", i)})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = s
	}
	return out
}

func (f fixture) serialsOfSeries(t *testing.T, s gst.Series) []int64 {
	t.Helper()
	rows, err := f.pool.Query(t.Context(), `SELECT serial FROM invoices WHERE series_id = $1 ORDER BY serial`, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestGroupCommitAcrossSeries: concurrent requests spread over many series
// share transactions, and every series stays exactly 1..N.
func TestGroupCommitAcrossSeries(t *testing.T) {
	t.Parallel()
	for _, inFlight := range []int{1, 2} {
		for _, strategy := range strategies {
			t.Run(fmt.Sprintf("in-flight=%d/%s", inFlight, strategy), func(t *testing.T) {
				t.Parallel()
				testAcrossSeries(t, inFlight, strategy)
			})
		}
	}
}

func testAcrossSeries(t *testing.T, inFlight int, strategy string) {
	f := setup(t)
	ss := f.moreSeries(t, 12)
	c := newCommitter(t, strategy, f.pool, invoice.Config{Now: func() time.Time { return now }, InFlight: inFlight,
		Options: series.Options{LockTimeout: 10 * time.Second}})
	const clients, each = 24, 30
	var mu sync.Mutex
	perSeries := map[int64][]int64{}
	var wg sync.WaitGroup
	for w := range clients {
		wg.Go(func() {
			for i := range each {
				s := ss[(w+i)%len(ss)]
				d, err := document.Prepare(document.Request{Items: []document.ItemInput{chai("1", "10", "5")}}, f.seller, s, now, document.Policy{})
				if err != nil {
					t.Error(err)
					return
				}
				d.IdempotencyKey, d.RequestHash = fmt.Sprintf("w%d-%d", w, i), []byte("h")
				r := c.Issue(t.Context(), invoice.IssueRequest{Seller: f.seller, Series: s, Draft: d})
				if r.Err != nil {
					t.Errorf("issue: %v", r.Err)
					return
				}
				mu.Lock()
				perSeries[s.ID] = append(perSeries[s.ID], r.Invoice.Serial)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	total := 0
	for _, s := range ss {
		got := perSeries[s.ID]
		sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
		checkContiguous(t, got, len(got))
		checkContiguous(t, f.serialsOfSeries(t, s), len(got))
		total += len(got)
	}
	if total != clients*each {
		t.Fatalf("%d invoices acknowledged, want %d", total, clients*each)
	}
	st := c.Stats()
	if st.Invoices != int64(total) || st.Batches >= st.Invoices {
		t.Fatalf("stats %+v: want fewer transactions than invoices", st)
	}
	if st.Mispredicted != 0 {
		t.Errorf("stats %+v: one process alone mispredicted", st)
	}
	verifyChains(t, f)
	t.Logf("stats %+v", st)
}

// TestGroupCommitStuckSeriesDoesNotHoldOthers: a transaction that holds one
// series' counter and does not finish delays that series only.
func TestGroupCommitStuckSeriesDoesNotHoldOthers(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ss := f.moreSeries(t, 6)
	ctx := t.Context()
	// Nobody waits for the stuck series to time out. Every issue of
	// another series that begins while the stuck one waits must end
	// before the stuck one's answer (an event), and within 3/4 of its lock
	// timeout; that timeout is 2 s or, on a loaded machine, ten rounds as
	// one takes there now without a stuck series (a measured reference),
	// so that load slows the test instead of failing it. A round begins
	// while the stuck series waits only in the first half of its lock
	// timeout (later ones wait for its answer first), so that an issue
	// cannot straddle the answer by bad luck. Citus statements cost about
	// 1 ms each on this machine's two cores, so a round there takes longer
	// and gets a longer timeout.
	lockTimeout := 2 * time.Second
	if dbtest.Citus(t) {
		lockTimeout = 5 * time.Second
	}
	// The reference: the faster of two rounds (the first one warms the
	// pool) on series of their own, through a Committer of their own.
	ref := time.Hour
	{
		rc := mustCommitter(invoice.NewCommitter(f.pool, testfactory.Config(t, invoice.Config{Now: func() time.Time { return now }})))
		refSeries := make([]gst.Series, len(ss))
		for i := range refSeries {
			s, err := series.CreateSeries(ctx, f.pool, series.NewSeries{SellerID: f.seller.ID, Code: fmt.Sprintf("R%d", i), DocType: "invoice", Format: fmt.Sprintf("R%d/{FY}/{SEQ:6}", i)})
			if err != nil {
				t.Fatal(err)
			}
			refSeries[i] = s
		}
		for range 2 {
			var mu sync.Mutex
			var slowest time.Duration
			var rw sync.WaitGroup
			for _, s := range refSeries {
				rw.Go(func() {
					d, err := document.Prepare(document.Request{Items: []document.ItemInput{chai("1", "10", "5")}}, f.seller, s, now, document.Policy{})
					if err != nil {
						t.Error(err)
						return
					}
					began := time.Now()
					if r := rc.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: s, Draft: d}); r.Err != nil {
						t.Error(r.Err)
					}
					mu.Lock()
					slowest = max(slowest, time.Since(began))
					mu.Unlock()
				})
			}
			rw.Wait()
			ref = min(ref, slowest)
		}
	}
	lockTimeout = max(lockTimeout, 10*ref)
	bound := lockTimeout * 3 / 4
	t.Logf("a round without a stuck series took %v: lock timeout %v", ref, lockTimeout)
	c := mustCommitter(invoice.NewCommitter(f.pool, testfactory.Config(t, invoice.Config{Now: func() time.Time { return now },
		Options: series.Options{LockTimeout: lockTimeout}})))
	holder, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := series.Next(ctx, holder, f.s, date(t, "2026-11-29"), now, testfactory.Options(t, series.Options{})); err != nil {
		t.Fatal(err)
	}
	issue := func(s gst.Series) (invoice.Result, time.Duration) {
		d, err := document.Prepare(document.Request{Items: []document.ItemInput{chai("1", "10", "5")}}, f.seller, s, now, document.Policy{})
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: s, Draft: d})
		return r, time.Since(began)
	}
	var wg sync.WaitGroup
	var stuck invoice.Result
	var stuckTook time.Duration
	stuckAnswered := make(chan struct{})
	stuckBegan := time.Now()
	wg.Go(func() {
		stuck, stuckTook = issue(f.s)
		close(stuckAnswered)
	})
	waiting := 0 // rounds begun while the stuck series waited
	for round := range 5 {
		select {
		case <-stuckAnswered:
		default:
			if time.Since(stuckBegan) < lockTimeout/2 {
				waiting++
			} else {
				<-stuckAnswered
			}
		}
		whileStuck := waiting > round
		var rw sync.WaitGroup
		for _, s := range ss {
			rw.Go(func() {
				r, took := issue(s)
				if r.Err != nil {
					t.Errorf("round %d, series %s: %v", round, s.Code, r.Err)
				}
				// A shared batch waits at most 250 ms for its locks
				// before the stuck series is split off.
				if took > bound {
					t.Errorf("round %d, series %s waited %v behind the stuck series", round, s.Code, took)
				}
				if whileStuck {
					select {
					case <-stuckAnswered:
						t.Errorf("round %d, series %s waited behind the stuck series: answered after it, %v after it began", round, s.Code, took)
					default:
					}
				}
			})
		}
		rw.Wait()
	}
	wg.Wait()
	if waiting == 0 {
		t.Errorf("no round began while the stuck series waited: the property was not exercised")
	}
	if !errors.Is(stuck.Err, series.ErrLockTimeout) || stuckTook < lockTimeout || stuckTook > lockTimeout+4*time.Second {
		t.Fatalf("stuck series: %v after %v; want ErrLockTimeout after its %v lock timeout", stuck.Err, stuckTook, lockTimeout)
	}
	for _, s := range ss {
		checkContiguous(t, f.serialsOfSeries(t, s), 5)
	}
	holder.Rollback(ctx)
	if r, _ := issue(f.s); r.Err != nil || r.Invoice.Serial != 1 {
		t.Fatalf("after the holder rolled back: %+v", r)
	}
}

// TestGroupCommitSeriesRefusedAloneInASharedBatch: one series' date-order
// refusal inside a shared transaction fails only that series' members.
func TestGroupCommitSeriesRefusedAloneInASharedBatch(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ss := f.moreSeries(t, 2)
	a, b := ss[0], ss[1]
	ctx := t.Context()
	c := mustCommitter(invoice.NewCommitter(f.pool, testfactory.Config(t, invoice.Config{Now: func() time.Time { return now },
		Options: series.Options{LockTimeout: 10 * time.Second}})))
	prep := func(s gst.Series, day string) document.Draft {
		d, err := document.Prepare(document.Request{InvoiceDate: date(t, day), Items: []document.ItemInput{chai("1", "10", "5")}},
			f.seller, s, now, document.Policy{BackdateDays: 5})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: a, Draft: prep(a, "2026-11-29")}); r.Err != nil {
		t.Fatal(r.Err)
	}
	// One IssueBatch call queues its requests under one lock, so the next
	// shared batch takes A's and B's queues together: no timing involved
	// (holding the drainer with a lock wait raced sharedLockWait).
	rs := c.IssueBatch(ctx, []invoice.IssueRequest{
		{Seller: f.seller, Series: a, Draft: prep(a, "2026-11-27")},
		{Seller: f.seller, Series: b, Draft: prep(b, "2026-11-29")},
		{Seller: f.seller, Series: b, Draft: prep(b, "2026-11-29")},
	})
	if st := c.Stats(); st.MaxBatch != 3 {
		t.Fatalf("stats %+v: want the three requests taken by one batch", st)
	}
	if !errors.Is(rs[0].Err, series.ErrDateOutOfOrder) {
		t.Fatalf("a-late: %+v, want date_out_of_order", rs[0])
	}
	for i, r := range rs[1:] {
		if r.Err != nil {
			t.Fatalf("b%d failed with its neighbour: %v", i+1, r.Err)
		}
	}
	checkContiguous(t, f.serialsOfSeries(t, a), 1)
	checkContiguous(t, f.serialsOfSeries(t, b), 2)
}

// waitForLockWait waits until a backend of the test's database waits for a
// lock: on Citus the waiting backends are the workers' (the counter rows
// live there), which citus_stat_activity shows with every node's; on
// PostgreSQL pg_stat_activity shows them.
func waitForLockWait(t *testing.T, f fixture) {
	t.Helper()
	view := "pg_stat_activity"
	if dbtest.Citus(t) {
		view = "citus_stat_activity"
	}
	waitUntil(t, "a lock wait to begin", func() bool {
		var waiting int
		f.pool.QueryRow(t.Context(), `SELECT count(*) FROM `+view+` WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting)
		return waiting > 0
	})
}
