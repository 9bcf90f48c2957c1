package client

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
)

// batch returns n sales as batch items without keys.
func batch(n int) []BatchItem {
	items := make([]BatchItem, n)
	for i := range items {
		items[i] = BatchItem{Items: sale().Items}
	}
	return items
}

// TestIssueBatchNumbersAndReplays: a batch with an invalid item in the
// middle numbers the valid ones consecutively in request order, refuses
// the invalid one alone as a result (not an error) without a number; the
// same items sent again replay every issued one; the next invoice takes
// the next serial.
func TestIssueBatchNumbersAndReplays(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := fastClient(e.url, e.all)
	ctx := t.Context()
	items := batch(6)
	items[3].Items = []ItemInput{{Description: "Refund", HSN: "0902", Quantity: "-1", UnitPrice: "10.00", GSTRate: "5"}}
	items[4].IdempotencyKey = "till-4-sale-17" // the caller's own key is kept

	first, err := c.IssueBatch(ctx, "CH1", items)
	if err != nil {
		t.Fatalf("IssueBatch: %v", err)
	}
	keys := map[string]bool{}
	for i, it := range items {
		if it.IdempotencyKey == "" || keys[it.IdempotencyKey] {
			t.Fatalf("item %d: key %q empty or repeated", i, it.IdempotencyKey)
		}
		keys[it.IdempotencyKey] = true
	}
	if items[4].IdempotencyKey != "till-4-sale-17" {
		t.Fatalf("caller's key replaced by %q", items[4].IdempotencyKey)
	}
	want := []int64{1, 2, 3, 0, 4, 5}
	for i, r := range first.Results {
		if i == 3 {
			if r.Status != 422 || r.Invoice != nil || r.Err() == nil || r.Err().Code == "" || r.Err().Message == "" {
				t.Fatalf("invalid item: %+v (err %v)", r, r.Err())
			}
			continue
		}
		if r.Status != 201 || r.Err() != nil || r.Invoice == nil || r.Invoice.Serial != want[i] || r.Replayed || r.Invoice.Replayed {
			t.Fatalf("item %d: %+v, want serial %d issued now", i, r, want[i])
		}
	}

	again, err := c.IssueBatch(ctx, "CH1", items)
	if err != nil {
		t.Fatalf("IssueBatch again: %v", err)
	}
	for i, r := range again.Results {
		if i == 3 {
			if r.Status != 422 {
				t.Fatalf("invalid item again: %+v", r)
			}
			continue
		}
		if r.Status != 201 || !r.Replayed || r.Invoice == nil || !r.Invoice.Replayed || r.Invoice.ID != first.Results[i].Invoice.ID {
			t.Fatalf("item %d again: %+v, want the replay of %s", i, r, first.Results[i].Invoice.ID)
		}
	}
	next, err := c.IssueInvoice(ctx, "CH1", sale())
	if err != nil || next.Serial != 6 {
		t.Fatalf("next invoice: serial %d, %v; want 6", next.Serial, err)
	}
	if s := serials(t, c, "CH1"); !slices.Equal(s, oneTo(6)) {
		t.Fatalf("series holds %v, want 1..6", s)
	}
}

// TestIssueBatchLostAnswer: the batch's first answer is lost after the
// server committed; the retry sends the same bytes (the same keys) and
// every item learns its invoice, replayed, issued exactly once.
func TestIssueBatchLostAnswer(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const n = 20
	e.proxy.set(nil, step{fault: loseAnswer}, step{fault: loseAnswer})
	c := fastClient(e.proxy.url, e.all)
	res, err := c.IssueBatch(t.Context(), "CH1", batch(n))
	if err != nil {
		t.Fatalf("IssueBatch: %v", err)
	}
	for i, r := range res.Results {
		if r.Status != 201 || !r.Replayed || r.Invoice == nil || r.Invoice.Serial != int64(i+1) {
			t.Fatalf("item %d: %+v, want serial %d replayed", i, r, i+1)
		}
	}
	if s := serials(t, New(e.url, e.all), "CH1"); !slices.Equal(s, oneTo(n)) {
		t.Fatalf("series holds %v, want 1..%d", s, n)
	}
	seen := e.proxy.seen()
	if len(seen) != 3 {
		t.Fatalf("%d attempts, want 3", len(seen))
	}
	for _, a := range seen[1:] {
		if a.key != "" || !bytes.Equal(a.body, seen[0].body) {
			t.Fatalf("retry differs from the first attempt (header key %q)", a.key)
		}
	}
}

// TestIssueBatchRetriesItemResults: an answer whose items are 503
// series_busy is retried as a whole, and the retry's results are returned.
func TestIssueBatchRetriesItemResults(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const n = 3
	busy := `{"status":503,"error":{"code":"series_busy","message":"busy"}}`
	body := `{"results":[` + strings.Repeat(busy+",", n-1) + busy + `]}`
	e.proxy.set(nil, step{fault: synthesized, status: 200, body: body})
	c := fastClient(e.proxy.url, e.all)
	res, err := c.IssueBatch(t.Context(), "CH1", batch(n))
	if err != nil {
		t.Fatalf("IssueBatch: %v", err)
	}
	for i, r := range res.Results {
		if r.Status != 201 || r.Replayed || r.Invoice.Serial != int64(i+1) {
			t.Fatalf("item %d: %+v", i, r)
		}
	}
	if got := len(e.proxy.seen()); got != 2 {
		t.Fatalf("%d attempts, want 2", got)
	}
}

// TestIssueBatchEnvelopeRefused: a refusal of the whole request is an
// *Error, and no number is taken.
func TestIssueBatchEnvelopeRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := fastClient(e.url, e.all)
	items := batch(2)
	items[0].IdempotencyKey, items[1].IdempotencyKey = "same", "same"
	_, err := c.IssueBatch(t.Context(), "CH1", items)
	if ce, ok := err.(*Error); !ok || ce.Status != 422 || IsOutcomeUnknown(err) {
		t.Fatalf("two items with one key: %v, want a 422 *Error", err)
	}
	if s := serials(t, c, "CH1"); len(s) != 0 {
		t.Fatalf("series holds %v, want none", s)
	}
}

// TestBatchOverRateLimitNotRetried: a batch carrying more invoices than
// the key's --rate-limit allows at once can never pass; the client
// returns over_rate_limit after one request instead of retrying it.
func TestBatchOverRateLimitNotRetried(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	seller := testfactory.Seller(t, pool, &testfactory.SellerOpts{GSTIN: sellerGSTIN, Name: "Rate Test Stall"})
	testfactory.Series(t, pool, seller, &testfactory.SeriesOpts{Code: "CH1", Format: "CH1/{FY}/{SEQ:5}"})
	key, err := apikey.Create(ctx, pool, seller.ID, []string{apikey.ScopeIssue})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	h := api.New(api.Config{Pool: pool, FailureRate: -1, KeyRate: 2}).Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	// A client that retried over_rate_limit would retry until its context
	// ends: bound it, so that it fails on the count below and not by
	// hanging until the test's timeout.
	callCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err = fastClient(ts.URL, key).IssueBatch(callCtx, "CH1", []BatchItem{{Items: sale().Items}, {Items: sale().Items}, {Items: sale().Items}})
	var ce *Error
	if !errors.As(err, &ce) || ce.Status != http.StatusTooManyRequests || ce.Code != CodeOverRateLimit {
		t.Fatalf("a batch of 3 under --rate-limit 2: %v, want 429 %s", err, CodeOverRateLimit)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the client sent the batch %d times, want once", n)
	}
}
