package invoice_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/lease"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
)

func predicting(t testing.TB, f fixture, now func() time.Time) *invoice.Committer {
	return mustCommitter(invoice.NewCommitter(f.pool, testfactory.Config(t, invoice.Config{Now: now,
		Options: series.Options{LockTimeout: 10 * time.Second}})))
}

func verifyChains(t *testing.T, f fixture) {
	t.Helper()
	rep, err := reports.Verify(t.Context(), f.pool, f.seller, "", gst.FYOf(now))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("chain does not verify: %+v", rep.Findings())
	}
}

// TestPredictTwoProcessesOneSeries runs two predicting Committers (two
// server processes) on one series at once, with cancellations appending to
// the chain between them: each keeps mispredicting the other's writes, and
// still every serial is taken exactly once, 1..N, and the chain verifies.
func TestPredictTwoProcessesOneSeries(t *testing.T) {
	t.Parallel()
	f := setup(t)
	clock := func() time.Time { return now }
	procs := []*invoice.Committer{predicting(t, f, clock), predicting(t, f, clock)}
	const clients, each = 12, 25
	var n sync.Mutex
	issued := 0
	got := issueConcurrently(t, f, clients, each, func(w int) *invoice.Committer { return procs[w%2] }, func(r invoice.Result) {
		n.Lock()
		issued++
		cancel := issued%10 == 3
		n.Unlock()
		if cancel {
			if _, err := invoice.Cancel(t.Context(), f.pool, f.seller, r.Invoice.ID, "wrong buyer", now, testfactory.Options(t, series.Options{})); err != nil {
				t.Errorf("cancel: %v", err)
			}
		}
	})
	checkContiguous(t, got, clients*each)
	checkContiguous(t, serialsOf(t, f), clients*each)
	verifyChains(t, f)
	a, b := procs[0].Stats(), procs[1].Stats()
	t.Logf("stats %+v %+v", a, b)
	if tried := a.Predicted + b.Predicted + a.Mispredicted + b.Mispredicted; tried == 0 {
		t.Errorf("%d transactions tried a prediction, want some (none on Citus)", tried)
	}
	// Both processes issued, between them every invoice; and where
	// prediction runs, each mispredicted the other's writes (or the
	// cancellations'), which is what the test is about: a wrong
	// prediction costs nothing and loses no number.
	if a.Invoices == 0 || b.Invoices == 0 || a.Invoices+b.Invoices != clients*each {
		t.Errorf("the processes issued %d and %d invoices, want both some and %d in all", a.Invoices, b.Invoices, clients*each)
	}
	if a.Mispredicted == 0 || b.Mispredicted == 0 {
		t.Errorf("mispredictions %d and %d: want each process to have mispredicted the other's writes", a.Mispredicted, b.Mispredicted)
	}
}

// TestPredictFallsBack walks one series through every way a prediction can
// fail, checking each time that the request gets the answer the ordinary
// path gives and that no number is lost.
func TestPredictFallsBack(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	clock := now
	c := predicting(t, f, func() time.Time { return clock })
	issue := func(key string, mod func(*document.Draft)) invoice.Result {
		d := f.draft(t, key)
		if mod != nil {
			mod(&d)
		}
		return c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: d})
	}
	want := func(r invoice.Result, serial int64, predicted, mispredicted int64) {
		t.Helper()
		if r.Err != nil {
			t.Fatalf("serial %d: %v", serial, r.Err)
		}
		st := c.Stats()
		if r.Invoice.Serial != serial || st.Predicted != predicted || st.Mispredicted != mispredicted {
			t.Fatalf("got serial %d with stats %+v; want serial %d, predicted %d, mispredicted %d",
				r.Invoice.Serial, st, serial, predicted, mispredicted)
		}
	}

	// The first transaction reads the row; the second predicts it.
	first := issue("a", nil)
	want(first, 1, 0, 0)
	want(issue("b", nil), 2, 1, 0)

	// Another writer (a library caller) takes number 3: the prediction
	// fails under the lock, nothing is taken, and the ordinary path issues 4.
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := invoice.IssueTx(ctx, tx, f.seller, f.s, []document.Draft{f.draft(t, "lib")}, now, testfactory.Options(t, series.Options{})); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want(issue("c", nil), 4, 1, 1)

	// The failed row is not predicted for a while: the next one reads it.
	want(issue("d", nil), 5, 1, 1)

	// A replay of a used key, a key used with another body, and a date
	// before the series' last date: each is answered as without prediction.
	c2 := predicting(t, f, func() time.Time { return clock })
	for _, k := range []string{"e", "f"} { // c2 learns the row
		if r := c2.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, k)}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if st := c2.Stats(); st.Predicted != 1 {
		t.Fatalf("c2 stats %+v, want 1 predicted", st)
	}
	r := c2.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, "a")})
	if r.Err != nil || !r.Replayed || r.Invoice.ID != first.Invoice.ID {
		t.Fatalf("replay: %+v", r)
	}
	reused := f.draft(t, "b")
	reused.RequestHash = []byte("another body")
	if r := c2.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: reused}); !errors.Is(r.Err, invoice.ErrKeyReused) {
		t.Fatalf("reused key: %v", r.Err)
	}
	late := f.draft(t, "late")
	late.InvoiceDate = late.InvoiceDate.AddDate(0, 0, -1)
	if r := c2.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: late}); !errors.Is(r.Err, series.ErrDateOutOfOrder) {
		t.Fatalf("earlier date: %v", r.Err)
	}
	if st := c2.Stats(); st.Mispredicted != 2 {
		t.Fatalf("c2 stats %+v, want the replay and the reused key mispredicted", st)
	}

	// The clock goes back: a predicted invoice keeps the series' last issue
	// time, as the ordinary path does.
	r = c2.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, "g")})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	lastAt := r.Invoice.IssuedAt
	clock = now.Add(-time.Hour)
	r = c2.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, "h")})
	if r.Err != nil || r.Invoice.IssuedAt.Before(lastAt) || r.Invoice.Serial != 9 {
		t.Fatalf("after the clock went back: %+v (last issued at %v)", r, lastAt)
	}
	if st := c2.Stats(); st.Predicted < 2 {
		t.Fatalf("c2 stats %+v: the clock test was not predicted", st)
	}
	checkContiguous(t, serialsOf(t, f), 9)
	verifyChains(t, f)
}

// TestPredictFallsBackOnAFailedStatement: when a statement of a predicted
// transaction fails for a reason that is not a prediction (here the
// schema lacks invoiced_require and invoiced_issue_rows_v2, as a database
// not migrated to 00002 would), the batch is issued the ordinary way and the caller never sees
// the error; no number is lost.
func TestPredictFallsBackOnAFailedStatement(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	c := predicting(t, f, func() time.Time { return now })
	issue := func(key string) invoice.Result {
		return c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, key)})
	}
	for _, k := range []string{"a", "b"} {
		if r := issue(k); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if st := c.Stats(); st.Predicted != 1 {
		t.Fatalf("stats %+v, want the second transaction predicted", st)
	}
	// The pipelined prediction calls invoiced_require; the delegated one
	// (Citus) is invoiced_issue_rows_v2.
	if _, err := f.pool.Exec(ctx, `DROP FUNCTION invoiced_require(boolean, text, text); DROP FUNCTION invoiced_issue_rows_v2`); err != nil {
		t.Fatal(err)
	}
	r := issue("c")
	if r.Err != nil || r.Invoice.Serial != 3 {
		t.Fatalf("after the failed prediction: %+v", r)
	}
	if st := c.Stats(); st.Predicted != 1 || st.Mispredicted != 1 {
		t.Fatalf("stats %+v, want 1 predicted and 1 mispredicted", st)
	}
	checkContiguous(t, serialsOf(t, f), 3)
}

// TestPredictedLeasedSeriesIsNoMisprediction: a series the scheduler
// predicts is leased to a device; the next request is answered 409
// series_leased, as without prediction, and the lease guard's refusal is
// not logged as a failed prediction.
func TestPredictedLeasedSeriesIsNoMisprediction(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	var log bytes.Buffer
	c := mustCommitter(invoice.NewCommitter(f.pool, testfactory.Config(t, invoice.Config{Now: func() time.Time { return now },
		Options: series.Options{LockTimeout: 10 * time.Second}, Logger: slog.New(slog.NewTextHandler(&log, nil))})))
	for _, k := range []string{"a", "b"} {
		if r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, k)}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if st := c.Stats(); st.Predicted != 1 {
		t.Fatalf("stats %+v, want the second transaction predicted", st)
	}
	if _, err := lease.TakeLease(ctx, f.pool, f.s, "till-7", "test", now); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"c", "d"} {
		if r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, k)}); !errors.Is(r.Err, series.ErrLeased) {
			t.Fatalf("issue %s in a leased series: %v, want series_leased", k, r.Err)
		}
	}
	if strings.Contains(log.String(), "predicted transaction failed") {
		t.Fatalf("a lease refusal was logged as a failed prediction:\n%s", log.String())
	}
	checkContiguous(t, serialsOf(t, f), 2)
}
