package api

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/invoiced/invoiced/series"
)

// clock is a test clock that can be moved while a server runs.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.set(t)
	return c
}

func (c *clock) set(t time.Time) { c.ns.Store(t.UnixNano()) }
func (c *clock) now() time.Time  { return time.Unix(0, c.ns.Load()) }
func (e *env) keyInvoices(key string) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.t.Context(), `SELECT count(*) FROM idempotency_keys WHERE key = $1`, key).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// holdCounter locks CH1's counter row of the financial year of day from
// another transaction until the returned function is called.
func (e *env) holdCounter(day time.Time) func() {
	e.t.Helper()
	ctx := e.t.Context()
	sr, err := series.Get(ctx, e.pool, e.seller.ID, "CH1")
	if err != nil {
		e.t.Fatal(err)
	}
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, _, err := series.LockChain(ctx, tx, sr.SellerID, sr.ID, gst.FYAt(day), series.Options{}); err != nil {
		e.t.Fatal(err)
	}
	release := sync.OnceFunc(func() { tx.Rollback(context.Background()) })
	e.t.Cleanup(release)
	return release
}

// activity names the view of the backends that may wait for a row lock:
// on Citus the lock waits are the workers' backends (citus_stat_activity
// shows every node's), on PostgreSQL its own.
func (e *env) activity() string {
	if e.cfg.Citus {
		return "citus_stat_activity"
	}
	return "pg_stat_activity"
}

func (e *env) waitForLockWait() {
	e.t.Helper()
	testwait.Until(e.t, 10*time.Second, func() bool {
		var n int
		e.pool.QueryRow(e.t.Context(), `SELECT count(*) FROM `+e.activity()+` WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&n)
		return n > 0
	}, "a lock wait to begin")
}

// waitForLockWaitLongerThan waits until some backend of the test's
// database has waited for a lock for longer than d.
func (e *env) waitForLockWaitLongerThan(d time.Duration) {
	e.t.Helper()
	testwait.Until(e.t, 20*time.Second, func() bool {
		var n int
		e.pool.QueryRow(e.t.Context(), `SELECT count(*) FROM `+e.activity()+`
			WHERE wait_event_type = 'Lock' AND datname = current_database() AND clock_timestamp() - query_start > $1`, d).Scan(&n)
		return n > 0
	}, "a lock wait longer than %s", d)
}

// TestRetryAtISTMidnightIsNoDefinitiveRefusal: an invoice dated today with
// Idempotency-Key K is queued at 23:59:59.9 IST behind a running batch of
// its series (--backdate-days 0); the client retries K at 00:00:00.1. No
// answer for K may be a definitive refusal while the first attempt can
// still commit: either K is issued (and every answer for it is the invoice
// or "in progress"), or it is refused and never issued.
func TestRetryAtISTMidnightIsNoDefinitiveRefusal(t *testing.T) {
	t.Parallel()
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, gst.IST)
	clk := newClock(day.Add(10 * time.Hour))
	e := setup(t, func(c *Config) { c.Now = clk.now; c.LockTimeout = 20 * time.Second })
	e.mustIssue("CH1", "") // the counter row exists
	release := e.holdCounter(day)
	path := "/v1/series/CH1/invoices"
	body := issueJSON("2026-11-29")
	clk.set(day.Add(24*time.Hour - 100*time.Millisecond)) // 23:59:59.9 IST
	var wg sync.WaitGroup
	var first, original resp
	wg.Go(func() { first = e.do("POST", path, e.all, issueJSON("")) }) // a running batch of CH1
	e.waitForLockWait()
	wg.Go(func() { original = e.do("POST", path, e.all, body, "Idempotency-Key", "K") })
	// The original waits in its queue; its connection drops, and the
	// client retries after midnight. The clock moves only once the running
	// batch is in its own transaction: a shared batch waits for its
	// counter lock no longer than the Committer's shared lock wait (250 ms)
	// and is then retried alone, judging its date again, so a clock moved
	// before that retry began would refuse the running batch itself.
	e.waitForLockWaitLongerThan(400 * time.Millisecond)
	clk.set(day.Add(24*time.Hour + 100*time.Millisecond)) // 00:00:00.1 IST
	var retry resp
	retried := make(chan struct{})
	go func() {
		defer close(retried)
		retry = e.do("POST", path, e.all, body, "Idempotency-Key", "K")
	}()
	select {
	case <-retried:
	case <-time.After(time.Second):
	}
	release()
	wg.Wait()
	<-retried
	if first.status != http.StatusCreated {
		t.Fatalf("the running batch: %d %s", first.status, first.body)
	}
	issued := e.keyInvoices("K")
	for name, r := range map[string]resp{"original": original, "retry": retry} {
		definitive := r.status >= 400 && r.status < 500 && !(r.status == http.StatusConflict && errCode(r) == "idempotency_key_in_progress")
		if issued > 0 && definitive {
			t.Errorf("the %s of K was refused %d %s, and K was issued afterwards", name, r.status, r.body)
		}
		t.Logf("%s: %d %s", name, r.status, r.body)
	}
}

func errCode(r resp) string {
	var b errorBody
	_ = json.Unmarshal(r.body, &b)
	return b.Error.Code
}

// TestCancelIsSafeToRetry: a cancel with an Idempotency-Key whose answer
// was lost is retried with the same key and body and answered 200 with
// the same bytes and Idempotent-Replayed; the key with another body is
// idempotency_key_reused; without a key a second cancel stays
// already_cancelled.
func TestCancelIsSafeToRetry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	inv := e.mustIssue("CH1", "")
	path := "/v1/invoices/" + inv.ID + "/cancel"
	body := `{"reason":"customer returned the chai"}`
	first := e.do("POST", path, e.issue, body, "Idempotency-Key", "cancel-1")
	e.wantStatus(first, http.StatusOK)
	if first.header.Get(headerReplayed) != "" {
		t.Fatalf("first cancel marked replayed")
	}
	again := e.do("POST", path, e.issue, body, "Idempotency-Key", "cancel-1")
	e.wantStatus(again, http.StatusOK)
	if string(again.body) != string(first.body) || again.header.Get(headerReplayed) != "true" {
		t.Fatalf("retry of the cancel: %s (replayed %q)\nfirst: %s", again.body, again.header.Get(headerReplayed), first.body)
	}
	e.wantError(e.do("POST", path, e.issue, `{"reason":"another reason"}`, "Idempotency-Key", "cancel-1"), http.StatusUnprocessableEntity, "idempotency_key_reused")
	e.wantError(e.do("POST", path, e.issue, body), http.StatusConflict, "already_cancelled")
	e.wantError(e.do("POST", path, e.issue, body, "Idempotency-Key", "cancel-2"), http.StatusConflict, "already_cancelled")
	// A key used to issue is not a cancel's key.
	issued := e.do("POST", "/v1/series/CH1/invoices", e.issue, issueJSON(""), "Idempotency-Key", "issue-1")
	e.wantStatus(issued, http.StatusCreated)
	e.wantError(e.do("POST", "/v1/invoices/"+e.invoice(issued).ID+"/cancel", e.issue, body, "Idempotency-Key", "issue-1"), http.StatusUnprocessableEntity, "idempotency_key_reused")
}

// TestCancelWaitsForALockedInvoiceNoLongerThanTheLockTimeout: an invoice
// row held locked by another transaction makes a cancel wait at most
// --lock-timeout, then answer 503 series_busy.
func TestCancelWaitsForALockedInvoiceNoLongerThanTheLockTimeout(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.LockTimeout = 300 * time.Millisecond; c.RequestTimeout = 10 * time.Second })
	inv := e.mustIssue("CH1", "")
	ctx := t.Context()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM invoices WHERE seller_id = $1 AND number = $2 FOR UPDATE`, e.seller.ID, inv.Number); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	r := e.do("POST", "/v1/invoices/"+inv.ID+"/cancel", e.issue, `{"reason":"x"}`)
	took := time.Since(began)
	e.wantError(r, http.StatusServiceUnavailable, "series_busy")
	if took > 3*time.Second {
		t.Fatalf("the cancel waited %v for the locked invoice; the lock timeout is 300ms", took)
	}
}
