package invoice_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
)

func serialsOf(t *testing.T, f fixture) []int64 {
	t.Helper()
	rows, err := f.pool.Query(context.Background(), `SELECT serial FROM invoices WHERE series_id = $1 ORDER BY serial`, f.s.ID)
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
	for _, batching := range []bool{true, false} {
		t.Run(fmt.Sprintf("batching=%v", batching), func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			c := &invoice.Committer{DB: f.pool, Batching: batching, Now: func() time.Time { return now },
				Options: series.Options{LockTimeout: 10 * time.Second}}
			const clients, each = 32, 40
			var mu sync.Mutex
			var got []int64
			var wg sync.WaitGroup
			for w := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						d := f.draft(t, fmt.Sprintf("w%d-%d", w, i))
						r := c.Issue(context.Background(), invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: d})
						if r.Err != nil {
							t.Errorf("issue: %v", r.Err)
							return
						}
						mu.Lock()
						got = append(got, r.Invoice.Serial)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
			checkContiguous(t, got, clients*each)
			checkContiguous(t, serialsOf(t, f), clients*each)
			st := c.Stats()
			if batching && st.MaxBatch < 2 {
				t.Logf("no batch larger than one formed (stats %+v)", st)
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
	ctx := context.Background()
	c := &invoice.Committer{DB: f.pool, Batching: true, Now: func() time.Time { return now },
		Options: series.Options{LockTimeout: 30 * time.Second}}

	holder, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := series.Next(ctx, holder, f.s, date(t, "2026-11-29"), now, series.Options{}); err != nil {
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
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	// The first request runs alone and waits on the held lock ...
	launch(0)
	waitFor("a lock wait", func() bool {
		var waiting int
		f.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting)
		return waiting > 0
	})
	// ... while the others queue behind it and form one batch.
	for i := 1; i < n; i++ {
		launch(i)
	}
	waitFor("the queue", func() bool { return invoice.PendingOf(c) == n-1 })
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, r := range results {
		switch {
		case i == 7 && r.Err == nil:
			t.Fatal("the member with the unstorable key succeeded")
		case i == 7:
		case i == 9 && errors.Is(r.Err, invoice.ErrKeyInProgress):
		case i == 9 && (r.Err != nil || !r.Replayed || r.Invoice.ID != results[3].Invoice.ID):
			t.Fatalf("member 9, a retry of member 3: %+v", r)
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
	ctx := context.Background()
	c := &invoice.Committer{DB: f.pool, Batching: true, Now: func() time.Time { return now }}
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
