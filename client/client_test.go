package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/testwait"
)

// serials returns the serials of every invoice of code, through
// ListInvoices with small pages.
func serials(t *testing.T, c *Client, code string) []int64 {
	t.Helper()
	var out []int64
	for page, err := range c.ListInvoices(t.Context(), code, ListOptions{Limit: 3}) {
		if err != nil {
			t.Fatalf("ListInvoices: %v", err)
		}
		for _, inv := range page.Invoices {
			out = append(out, inv.Serial)
		}
	}
	return out
}

func oneTo(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i + 1)
	}
	return s
}

// TestLostAnswersIssueOnce: every issue's first two answers are lost after
// the server committed; each call still returns its invoice, replayed, and
// the series holds exactly serials 1..N: the key made once per call is
// sent on every attempt with the same body.
func TestLostAnswersIssueOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const n = 12
	var plan []step
	for range 2 * n {
		plan = append(plan, step{fault: loseAnswer})
	}
	e.proxy.set(nil, plan...)
	c := fastClient(e.proxy.url, e.all)
	got := make([]Invoice, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			inv, err := c.IssueInvoice(t.Context(), "CH1", sale())
			if err != nil {
				t.Errorf("sale %d: %v", i, err)
			}
			got[i] = inv
		})
	}
	wg.Wait()
	nums := map[int64]bool{}
	for _, inv := range got {
		nums[inv.Serial] = true
	}
	if len(nums) != n {
		t.Fatalf("%d calls learnt %d distinct serials: %v", n, len(nums), got)
	}
	if s := serials(t, New(e.url, e.all), "CH1"); !slices.Equal(s, oneTo(n)) {
		t.Fatalf("series holds %v, want 1..%d", s, n)
	}
	// Every attempt of a call sent its one key and one body.
	byKey := map[string][][]byte{}
	for _, a := range e.proxy.seen() {
		if a.key == "" {
			t.Fatalf("issue attempt without Idempotency-Key")
		}
		byKey[a.key] = append(byKey[a.key], a.body)
	}
	if len(byKey) != n {
		t.Fatalf("%d keys for %d calls", len(byKey), n)
	}
	replayed := 0
	for _, inv := range got {
		if inv.Replayed {
			replayed++
		}
	}
	if replayed == 0 {
		t.Fatal("no call learnt its invoice from a replay, so no answer was lost")
	}
	for k, bodies := range byKey {
		for _, b := range bodies[1:] {
			if !bytes.Equal(b, bodies[0]) {
				t.Fatalf("key %s sent two bodies", k)
			}
		}
	}
}

// TestRetriesFollowTheAnswerTable sends each answer docs/api.md says to
// retry, then lets the request through, and each answer it says not to
// retry: a retried answer costs one more attempt with the same key, the
// others end the call at once with that *Error.
func TestRetriesFollowTheAnswerTable(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := fastClient(e.proxy.url, e.all)
	errBody := func(code string) string { return `{"error":{"code":"` + code + `","message":"m"}}` }
	for _, tc := range []struct {
		name  string
		step  step
		retry bool
	}{
		{"no answer", step{fault: refuse}, true},
		{"409 in progress", step{fault: synthesized, status: 409, body: errBody(CodeIdempotencyKeyInProgress)}, true},
		{"429", step{fault: synthesized, status: 429, body: errBody(CodeRateLimited), retryAfter: "1"}, true},
		{"500", step{fault: synthesized, status: 500, body: errBody("internal_error")}, true},
		{"503 outcome unknown", step{fault: synthesized, status: 503, body: errBody(CodeCommitOutcomeUnknown), retryAfter: "1"}, true},
		{"503 series busy", step{fault: synthesized, status: 503, body: errBody("series_busy"), retryAfter: "1"}, true},
		{"409 date order", step{fault: synthesized, status: 409, body: errBody(CodeDateOutOfOrder)}, false},
		{"409 exhausted", step{fault: synthesized, status: 409, body: errBody(CodeSeriesExhausted)}, false},
		{"422 invalid date", step{fault: synthesized, status: 422, body: errBody(CodeInvalidDate)}, false},
		{"422 key reused", step{fault: synthesized, status: 422, body: errBody(CodeIdempotencyKeyReused)}, false},
		{"400", step{fault: synthesized, status: 400, body: errBody("malformed_json")}, false},
		{"401", step{fault: synthesized, status: 401, body: errBody("unauthorized")}, false},
		{"403", step{fault: synthesized, status: 403, body: errBody("forbidden")}, false},
		{"404", step{fault: synthesized, status: 404, body: errBody("series_not_found")}, false},
	} {
		e.proxy.set(nil, tc.step)
		start := time.Now()
		inv, err := c.IssueInvoice(t.Context(), "CH1", sale())
		took := time.Since(start)
		seen := e.proxy.seen()
		if tc.retry {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			if len(seen) != 2 || seen[0].key != seen[1].key || !bytes.Equal(seen[0].body, seen[1].body) {
				t.Errorf("%s: %d attempts, want 2 with one key and body", tc.name, len(seen))
			}
			if tc.step.retryAfter != "" && took < time.Second {
				t.Errorf("%s: retried after %v, before Retry-After", tc.name, took)
			}
			if inv.Serial == 0 {
				t.Errorf("%s: no invoice", tc.name)
			}
			continue
		}
		var ae *Error
		if !errors.As(err, &ae) || ae.Status != tc.step.status || ae.Message != "m" {
			t.Errorf("%s: err %v, want *Error %d", tc.name, err, tc.step.status)
		}
		if IsOutcomeUnknown(err) {
			t.Errorf("%s: outcome unknown after one definitive answer", tc.name)
		}
		if len(seen) != 1 {
			t.Errorf("%s: %d attempts, want 1", tc.name, len(seen))
		}
	}
	if ae := (&Error{}); errors.As(fmt.Errorf("w: %w", &Error{RetryAfter: time.Second}), &ae) && ae.RetryAfter != time.Second {
		t.Fatal("RetryAfter lost through wrapping")
	}
	// The check above exercises errors.As on a value of its own. What a
	// caller gets: when its context ends while the client waits out a
	// Retry-After, the error the call returns (ctx's joined with the last
	// answer, or an outcome-unknown error) still holds that answer, its
	// status and Retry-After, for errors.As.
	defer e.proxy.set(nil)
	// The context falls once the client has read the 503 (closed its
	// body), not when the proxy saw the request: falling in between ends
	// the call with no answer to hold, as it should.
	read := make(chan struct{}, 1)
	cr := New(e.proxy.url, e.all, WithBackoff(5*time.Millisecond, 50*time.Millisecond),
		WithHTTPClient(&http.Client{Transport: bodyClosed{base: http.DefaultTransport, closed: read}}))
	for _, tc := range []struct {
		name string
		call func(context.Context) error
	}{
		{"issue", func(ctx context.Context) error { _, err := cr.IssueInvoice(ctx, "CH1", sale()); return err }},
		{"list series", func(ctx context.Context) error { _, err := cr.ListSeries(ctx); return err }},
	} {
		e.proxy.set(&step{fault: synthesized, status: 503, body: errBody("series_busy"), retryAfter: "7"})
		ctx := newEventDeadline()
		done := make(chan error, 1)
		go func() { done <- tc.call(ctx) }()
		select {
		case <-read:
		case <-time.After(10 * time.Second):
			t.Fatalf("the %s call's first answer was not read in 10 s", tc.name)
		}
		ctx.fall()
		err := <-done
		var ae *Error
		if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || ae.RetryAfter != 7*time.Second || ae.Code != "series_busy" {
			t.Errorf("%s: the call ended by its context returned %v; want it to hold the *Error of the 503 with Retry-After 7s (got %+v)", tc.name, err, ae)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v does not hold the context's error", tc.name, err)
		}
	}
}

// eventDeadline is a context whose deadline falls when the test calls fall,
// at an event of the test rather than at a time it guessed: Done closes and
// Err is context.DeadlineExceeded from then on.
type eventDeadline struct {
	context.Context // values and Deadline: none
	done            chan struct{}
	once            sync.Once
}

func newEventDeadline() *eventDeadline {
	return &eventDeadline{Context: context.Background(), done: make(chan struct{})}
}

func (d *eventDeadline) Done() <-chan struct{} { return d.done }

func (d *eventDeadline) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func (d *eventDeadline) fall() { d.once.Do(func() { close(d.done) }) }

// TestOutcomeUnknownUntilSettled: a call whose every answer is lost ends
// with the caller's context as outcome unknown, and retrying with its key
// learns the invoice it issued (exactly one). A call that only ever got
// "not done" answers is not outcome unknown; nor is one whose last answer
// settles it, while 401 after a lost answer says nothing.
func TestOutcomeUnknownUntilSettled(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := fastClient(e.proxy.url, e.all)

	// The deadline falls once a retry has begun, however long the first
	// attempt took (under load one attempt can outlast any fixed deadline).
	e.proxy.set(&step{fault: loseAnswer})
	dl := newEventDeadline()
	ended := make(chan error, 1)
	go func() {
		_, err := c.IssueInvoice(dl, "CH1", sale())
		ended <- err
	}()
	testwait.Until(t, time.Minute, func() bool { return len(e.proxy.seen()) >= 2 || len(ended) > 0 },
		"a second attempt after a lost answer")
	dl.fall()
	err := <-ended
	if !IsOutcomeUnknown(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("all answers lost: err %v, want outcome unknown and the deadline", err)
	}
	key := OutcomeKey(err)
	if len(e.proxy.seen()) < 2 || key != e.proxy.seen()[0].key {
		t.Fatalf("OutcomeKey %q, attempts %d", key, len(e.proxy.seen()))
	}
	inv, err := New(e.url, e.all).IssueInvoice(t.Context(), "CH1", sale(), IdempotencyKey(key))
	if err != nil || !inv.Replayed || inv.Serial != 1 {
		t.Fatalf("resume with the key: %+v, %v; want the replay of serial 1", inv, err)
	}
	if s := serials(t, New(e.url, e.all), "CH1"); !slices.Equal(s, oneTo(1)) {
		t.Fatalf("series holds %v", s)
	}

	// Retry-After outlasts the deadline, so the deadline falls while the
	// client waits between attempts, never during one (an attempt cut off
	// in flight may have reached the server: that would rightly be unknown).
	e.proxy.set(&step{fault: synthesized, status: 503, retryAfter: "30", body: `{"error":{"code":"database_unavailable","message":"m"}}`})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	_, err = c.IssueInvoice(ctx, "CH1", sale())
	cancel()
	var ae *Error
	if IsOutcomeUnknown(err) || !errors.As(err, &ae) || ae.Code != "database_unavailable" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("only 503 database_unavailable: err %v, want a known outcome with the last *Error", err)
	}
	// 503 commit_outcome_unknown: that attempt may have issued the invoice,
	// so the deadline falling while the client waits to retry leaves the
	// outcome unknown.
	e.proxy.set(&step{fault: synthesized, status: 503, retryAfter: "30", body: `{"error":{"code":"commit_outcome_unknown","message":"m"}}`})
	ctx, cancel = context.WithTimeout(t.Context(), 2*time.Second)
	_, err = c.IssueInvoice(ctx, "CH1", sale())
	cancel()
	if !IsOutcomeUnknown(err) || !errors.As(err, &ae) || ae.Code != CodeCommitOutcomeUnknown {
		t.Fatalf("503 commit_outcome_unknown, then the deadline: err %v, want outcome unknown with the last *Error", err)
	}

	e.proxy.set(nil, step{fault: loseAnswer}, step{fault: synthesized, status: 401, body: `{"error":{"code":"unauthorized","message":"m"}}`})
	_, err = c.IssueInvoice(t.Context(), "CH1", sale())
	if !IsOutcomeUnknown(err) || !errors.As(err, &ae) || ae.Status != 401 {
		t.Fatalf("401 after a lost answer: %v, want outcome unknown wrapping the 401", err)
	}

	// CreateSeries has no key: a duplicate after a lost answer may be its own.
	e.proxy.set(nil, step{fault: loseAnswer})
	_, err = c.CreateSeries(t.Context(), SeriesRequest{Code: "KA1", DocType: "invoice", Format: "KA1/{FY}/{SEQ:4}"})
	if !IsOutcomeUnknown(err) || !errors.As(err, &ae) || ae.Code != "duplicate_series" {
		t.Fatalf("CreateSeries after a lost answer: %v, want outcome unknown wrapping duplicate_series", err)
	}

	e.proxy.set(nil, step{fault: loseAnswer}, step{fault: synthesized, status: 422, body: `{"error":{"code":"invalid_date","message":"m"}}`})
	_, err = c.IssueInvoice(t.Context(), "CH1", sale())
	if IsOutcomeUnknown(err) || !errors.As(err, &ae) || ae.Code != CodeInvalidDate {
		t.Fatalf("invalid_date after a lost answer: %v, want a settled *Error", err)
	}
}

// TestEveryRouteAgainstTheServer calls each method against a real server.
func TestEveryRouteAgainstTheServer(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	c := New(e.url, e.all)
	if s, err := c.Healthz(ctx); err != nil || s.Status != "ok" {
		t.Fatalf("Healthz: %v %v", s, err)
	}
	if s, err := c.Readyz(ctx); err != nil || s.Status != "ok" {
		t.Fatalf("Readyz: %v %v", s, err)
	}
	if b, err := c.OpenAPI(ctx); err != nil || !bytes.HasPrefix(b, []byte("openapi: 3.0.3")) {
		t.Fatalf("OpenAPI: %v", err)
	}
	var ae *Error
	if _, err := c.DebugStats(ctx); !errors.As(err, &ae) || ae.Status != 404 {
		t.Fatalf("DebugStats without --stats: %v", err)
	}
	if _, err := c.Metrics(ctx); !errors.As(err, &ae) || ae.Status != 404 {
		t.Fatalf("Metrics not exposed: %v", err)
	}
	sr, err := c.CreateSeries(ctx, SeriesRequest{Code: "GJ1", DocType: "invoice", Format: "GJ1/{FY}/{SEQ:4}"})
	if err != nil || sr.Code != "GJ1" || sr.Capacity != 9999 || sr.CreatedAt.IsZero() {
		t.Fatalf("CreateSeries: %+v %v", sr, err)
	}
	if _, err := c.CreateSeries(ctx, SeriesRequest{Code: "GJ1", DocType: "invoice", Format: "GJ1/{FY}/X{SEQ:4}"}); !errors.As(err, &ae) || ae.Code != "duplicate_series" || IsOutcomeUnknown(err) {
		t.Fatalf("duplicate CreateSeries: %v", err)
	}
	tea := []ItemInput{{Description: "Tea", HSN: "0902", Quantity: "3", UnitPrice: "100.00", GSTRate: "18"}}
	if _, err := c.IssueInvoice(ctx, "gj1", IssueRequest{Buyer: &Buyer{GSTIN: "29AAGCB7383J1Z4", Name: "Bangalore Traders"}, PlaceOfSupply: "29", Items: tea}); !errors.As(err, &ae) || ae.Code != CodeParticularsMissing || IsOutcomeUnknown(err) {
		t.Fatalf("IssueInvoice to a registered buyer without an address: %v", err)
	}
	inv, err := c.IssueInvoice(ctx, "gj1", IssueRequest{
		Buyer:         &Buyer{GSTIN: "29AAGCB7383J1Z4", Name: "Bangalore Traders", Address: &Address{Line1: "14 Residency Road", City: "Bengaluru", PIN: "560025"}},
		ShipTo:        &ShipTo{Name: "Godown", Address: Address{Line1: "Plot 7", City: "Hoskote", PIN: "562114", State: "29"}},
		PlaceOfSupply: "29",
		Items:         tea,
	})
	if err != nil || inv.ID != "GJ1-"+inv.FY[:4]+"-1" || inv.Totals.IGST != "54.00" || inv.Buyer == nil || inv.Replayed ||
		inv.Buyer.Address == nil || inv.Buyer.Address.State != "29" || inv.ShipTo == nil || inv.ShipTo.Address.City != "Hoskote" {
		t.Fatalf("IssueInvoice: %+v %v", inv, err)
	}
	got, err := c.GetInvoice(ctx, inv.ID)
	if err != nil || got.Number != inv.Number || !got.IssuedAt.Equal(inv.IssuedAt) {
		t.Fatalf("GetInvoice: %+v %v", got, err)
	}
	if found, err := c.FindInvoices(ctx, strings.ToLower(inv.Number)); err != nil || len(found) != 1 || found[0].ID != inv.ID {
		t.Fatalf("FindInvoices(%q): %+v %v", strings.ToLower(inv.Number), found, err)
	}
	for page, err := range c.ListInvoices(ctx, "GJ1", ListOptions{From: inv.InvoiceDate, To: inv.InvoiceDate}) {
		if err != nil || len(page.Invoices) != 1 {
			t.Fatalf("ListInvoices from/to %s: %+v %v", inv.InvoiceDate, page, err)
		}
	}
	if _, err := c.GetInvoice(ctx, "GJ1-2026-99"); !errors.As(err, &ae) || ae.Status != 404 {
		t.Fatalf("GetInvoice unknown: %v", err)
	}
	if b, err := c.Receipt(ctx, inv.PublicID); err != nil || !strings.Contains(string(b), inv.Number) {
		t.Fatalf("Receipt: %v", err)
	}
	list, err := c.ListSeries(ctx)
	if err != nil || len(list) != 3 || list[2].Code != "GJ1" || list[2].Years[0].LastSerial != 1 {
		t.Fatalf("ListSeries: %+v %v", list, err)
	}
	ci, err := New(e.url, e.issue).CancelInvoice(ctx, inv.ID, "wrong buyer")
	if err != nil || ci.Status != "cancelled" || ci.CancelledAt == nil || ci.Items != nil {
		t.Fatalf("CancelInvoice with an issue-only key: %+v %v", ci, err)
	}
	if _, err := c.CancelInvoice(ctx, inv.ID, "again"); !errors.As(err, &ae) || ae.Code != CodeAlreadyCancelled || IsOutcomeUnknown(err) {
		t.Fatalf("second cancel: %v", err)
	}
	a, err := c.Audit(ctx, "GJ1", inv.FY)
	if err != nil || len(a.Rows) != 1 || a.Rows[0].Status != "cancelled" || a.Summary["cancelled"] != float64(1) {
		t.Fatalf("Audit: %+v %v", a, err)
	}
	csv, err := c.AuditFile(ctx, "GJ1", inv.FY, AuditCSV)
	if err != nil || !bytes.HasPrefix(csv, []byte("\xef\xbb\xbf")) {
		t.Fatalf("AuditFile csv: %v", err)
	}
	fp := inv.InvoiceDate[5:7] + inv.InvoiceDate[:4]
	d, err := c.GSTR1DocIssue(ctx, fp)
	if err != nil || d.GSTIN != sellerGSTIN || len(d.DocIssue.DocDet) != 1 || d.DocIssue.DocDet[0].Docs[0].Cancel != 1 {
		t.Fatalf("GSTR1DocIssue: %+v %v", d, err)
	}
	if _, err := c.IssueInvoice(ctx, "CH1", IssueRequest{Items: []ItemInput{{Description: "x", HSN: "0902", Quantity: "1", UnitPrice: "1", GSTRate: "7"}}}); !errors.As(err, &ae) || ae.Status != 422 || ae.Code == "" || ae.Message == "" || ae.RequestID == "" {
		t.Fatalf("invalid rate: %v", err)
	}
	if _, err := New(e.url, "ik_nope_nope").ListSeries(ctx); !errors.As(err, &ae) || ae.Status != 401 {
		t.Fatalf("bad key: %v", err)
	}
	ist := time.FixedZone("IST", 5*3600+1800)
	month := time.Now().In(ist)
	last := time.Date(month.Year(), month.Month(), 1, 0, 0, 0, 0, ist).AddDate(0, -1, 0).Format("012006")
	if _, err := c.LockPeriod(ctx, month.Format("012006")); !errors.As(err, &ae) || ae.Code != "period_not_ended" {
		t.Fatalf("LockPeriod of this month: %v", err)
	}
	lock, err := c.LockPeriod(ctx, last)
	if err != nil || lock.FP != last || lock.LockedAt.IsZero() || lock.LockedBy == "" {
		t.Fatalf("LockPeriod(%s): %+v %v", last, lock, err)
	}
	if again, err := c.LockPeriod(ctx, last); err != nil || !again.LockedAt.Equal(lock.LockedAt) {
		t.Fatalf("LockPeriod(%s) again: %+v %v", last, again, err)
	}
	periods, err := c.ListPeriods(ctx)
	if err != nil || len(periods.Locks) != 1 || periods.Locks[0].FP != last || len(periods.History) != 1 || periods.History[0].Action != "lock" {
		t.Fatalf("ListPeriods: %+v %v", periods, err)
	}
}

// TestListInvoicesPages walks 10 invoices in pages of 3 (4 pages), and
// stops fetching when the loop breaks.
func TestListInvoicesPages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := New(e.proxy.url, e.all)
	for range 10 {
		if _, err := c.IssueInvoice(t.Context(), "CH2", sale()); err != nil {
			t.Fatal(err)
		}
	}
	e.proxy.set(nil)
	pages := 0
	var got []int64
	for page, err := range c.ListInvoices(t.Context(), "CH2", ListOptions{Limit: 3}) {
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, inv := range page.Invoices {
			got = append(got, inv.Serial)
		}
	}
	if pages != 4 || !slices.Equal(got, oneTo(10)) {
		t.Fatalf("%d pages, serials %v", pages, got)
	}
	e.proxy.set(nil)
	for range c.ListInvoices(t.Context(), "CH2", ListOptions{Limit: 3}) {
		break
	}
	if n := len(e.proxy.seen()); n != 1 {
		t.Fatalf("a loop that broke after the first page fetched %d pages", n)
	}
	for _, err := range c.ListInvoices(t.Context(), "NOPE", ListOptions{}) {
		var ae *Error
		if !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
			t.Fatalf("unknown series: %v", err)
		}
	}
}

// TestNotFinalRefusalsLeaveTheOutcomeUnknown: 409 period_locked and
// series_leased are refusals of states that change back (the month is
// unlocked, the lease ends), given while an earlier attempt of the same
// key may still wait in a server's queue and then commit (docs/api.md,
// "What an answer lets a client conclude"): after a lost answer they do
// not settle the call, which ends outcome unknown wrapping the refusal.
func TestNotFinalRefusalsLeaveTheOutcomeUnknown(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := fastClient(e.proxy.url, e.all)
	for _, code := range []string{CodePeriodLocked, CodeSeriesLeased} {
		e.proxy.set(nil, step{fault: loseAnswer}, step{fault: synthesized, status: 409, body: `{"error":{"code":"` + code + `","message":"m"}}`})
		_, err := c.IssueInvoice(t.Context(), "CH1", sale())
		var ae *Error
		if !IsOutcomeUnknown(err) || !errors.As(err, &ae) || ae.Code != code {
			t.Errorf("%s after a lost answer: %v, want outcome unknown wrapping the 409", code, err)
		}
		// Without an earlier unknown attempt the refusal is the answer.
		e.proxy.set(nil, step{fault: synthesized, status: 409, body: `{"error":{"code":"` + code + `","message":"m"}}`})
		if _, err := c.IssueInvoice(t.Context(), "CH1", sale()); IsOutcomeUnknown(err) || !errors.As(err, &ae) || ae.Code != code {
			t.Errorf("%s alone: %v, want a known refusal", code, err)
		}
	}
}

// bodyClosed is a transport that tells closed (without blocking) each time
// the caller closes a response's body: it has read that answer.
type bodyClosed struct {
	base   http.RoundTripper
	closed chan struct{}
}

func (b bodyClosed) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.base.RoundTrip(r)
	if err == nil {
		resp.Body = &signalClose{ReadCloser: resp.Body, closed: b.closed}
	}
	return resp, err
}

// signalClose is a response body that signals its Close.
type signalClose struct {
	io.ReadCloser
	closed chan struct{}
}

func (s *signalClose) Close() error {
	err := s.ReadCloser.Close()
	select {
	case s.closed <- struct{}{}:
	default:
	}
	return err
}
