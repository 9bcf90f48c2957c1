package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/testfactory"

	"github.com/invoiced/invoiced/apikey"
)

// TestSeriesScopedKey: a key restricted to CH2 issues, reads, lists and
// cancels in CH2 only; every route on CH1 (or on all series) is 403
// series_forbidden and takes no number, an invoice of CH1 reached by
// number or database id is answered as a missing one, and GET /v1/series
// shows CH2 alone.
func TestSeriesScopedKey(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	testfactory.Series(t, e.pool, e.seller, &testfactory.SeriesOpts{Code: "CH2", Format: "CH2/{FY}/{SEQ:5}"})
	term, err := apikey.CreateForSeries(ctx, e.pool, e.seller.ID, []string{apikey.ScopeIssue, apikey.ScopeRead}, []string{"ch2"})
	if err != nil {
		t.Fatal(err)
	}
	ch1 := e.do("POST", "/v1/series/CH1/invoices", e.all, issueJSON(""))
	e.wantStatus(ch1, 201)
	var ch1Inv invoiceOut
	_ = json.Unmarshal(ch1.body, &ch1Inv)
	var legacyID int64
	if err := e.pool.QueryRow(ctx, `SELECT id FROM invoices WHERE number = $1`, ch1Inv.Number).Scan(&legacyID); err != nil {
		t.Fatal(err)
	}

	r := e.do("POST", "/v1/series/ch2/invoices", term, issueJSON(""))
	e.wantStatus(r, 201)
	var ch2Inv invoiceOut
	_ = json.Unmarshal(r.body, &ch2Inv)
	for _, path := range []string{"/v1/invoices/" + ch2Inv.ID, "/v1/series/CH2/invoices", "/v1/series/CH2/audit"} {
		e.wantStatus(e.do("GET", path, term, ""), 200)
	}
	r = e.do("GET", "/v1/series", term, "")
	e.wantStatus(r, 200)
	var list struct {
		Series []struct{ Code string } `json:"series"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Series) != 1 || list.Series[0].Code != "CH2" {
		t.Fatalf("series listing for a CH2 key: %s", r.body)
	}

	for _, req := range []struct{ method, path, body string }{
		{"POST", "/v1/series/CH1/invoices", issueJSON("")},
		{"POST", "/v1/series/ch1/invoices", issueJSON("")},
		{"GET", "/v1/series/CH1/invoices", ""},
		{"GET", "/v1/series/CH1/audit", ""},
		{"GET", "/v1/invoices/" + ch1Inv.ID, ""},
		{"GET", "/v1/invoices/CH1-2026-999", ""},
		{"POST", "/v1/invoices/" + ch1Inv.ID + "/cancel", `{"reason":"x"}`},
		{"GET", "/v1/reports/gstr1/doc-issue?fp=112026", ""},
		{"GET", "/v1/events", ""},
	} {
		r := e.do(req.method, req.path, term, req.body)
		e.wantError(r, 403, "series_forbidden")
		if !strings.Contains(string(r.body), "CH2") {
			t.Errorf("%s %s: message does not name the key's series: %s", req.method, req.path, r.body)
		}
	}
	// An invoice of another series is answered as one that does not
	// exist, so the key cannot tell which numbers CH1 has used: by number
	// (an empty list) and by database id (404), as for a number or an id
	// no invoice has.
	for _, number := range []string{ch1Inv.Number, "CH1/26-27/00999"} {
		r := e.do("GET", "/v1/invoices?number="+url.QueryEscape(number), term, "")
		e.wantStatus(r, 200)
		if string(r.body) != `{"invoices":[],"next_cursor":null}` {
			t.Errorf("find %s with the CH2 key: %s, want an empty list", number, r.body)
		}
	}
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/v1/invoices/" + strconv.FormatInt(legacyID, 10), ""},
		{"GET", "/v1/invoices/" + strconv.FormatInt(legacyID+1000, 10), ""},
		{"POST", "/v1/invoices/" + strconv.FormatInt(legacyID, 10) + "/cancel", `{"reason":"x"}`},
		{"POST", "/v1/invoices/" + strconv.FormatInt(legacyID+1000, 10) + "/cancel", `{"reason":"x"}`},
	} {
		e.wantError(e.do(req.method, req.path, term, req.body), 404, "invoice_not_found")
	}
	e.wantStatus(e.do("POST", "/v1/invoices/"+ch2Inv.ID+"/cancel", term, `{"reason":"void"}`), 200)
	// CH1 still has exactly its one invoice, never cancelled.
	var n int
	var status string
	if err := e.pool.QueryRow(ctx, `SELECT count(*), min(status) FROM invoices i JOIN series s ON s.id = i.series_id AND s.seller_id = $1
		WHERE s.code = 'CH1' AND i.seller_id = $1`, e.seller.ID).Scan(&n, &status); err != nil || n != 1 || status != "issued" {
		t.Fatalf("CH1 holds %d invoices (%s, %v), want 1 issued", n, status, err)
	}

	for _, c := range []struct {
		scopes, codes []string
	}{
		{[]string{apikey.ScopeIssue}, nil},
		{[]string{apikey.ScopeIssue}, []string{" "}},
		{[]string{apikey.ScopeIssue}, []string{"CH9"}},
		{[]string{apikey.ScopeIssue, apikey.ScopeManage}, []string{"CH1"}},
	} {
		if _, err := apikey.CreateForSeries(ctx, e.pool, e.seller.ID, c.scopes, c.codes); !errors.Is(err, apikey.ErrInvalidKeySeries) {
			t.Errorf("apikey.CreateForSeries(%v, %v): %v, want apikey.ErrInvalidKeySeries", c.scopes, c.codes, err)
		}
	}
	keys, err := apikey.List(ctx, e.pool, e.seller.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := keys[len(keys)-1]
	if strings.Join(last.Series, ",") != "CH2" || strings.Join(last.Scopes, ",") != "issue,read" || keys[0].Series != nil {
		t.Fatalf("Keys: %+v", keys)
	}
}

// TestSeriesKeyFailsClosedOnOlderBinaries: a restricted key's row holds no
// scope where a binary older than migration 00013 looks, so such a binary
// refuses it everything rather than letting it into every series.
func TestSeriesKeyFailsClosedOnOlderBinaries(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	key, err := apikey.CreateForSeries(ctx, e.pool, e.seller.ID, []string{apikey.ScopeIssue, apikey.ScopeRead}, []string{"CH1"})
	if err != nil {
		t.Fatal(err)
	}
	prefix, _, _ := apikey.Parse(key)
	var scopes []string
	if err := e.pool.QueryRow(ctx, `SELECT scopes FROM api_keys WHERE prefix = $1`, prefix).Scan(&scopes); err != nil || len(scopes) != 0 {
		t.Fatalf("scopes column %v (%v), want empty", scopes, err)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE api_keys SET series_codes = NULL WHERE prefix = $1`, prefix); err == nil {
		t.Fatal("a row restricted to no series, with its scopes hidden, was accepted")
	}
}

// TestKeyRateLimit: with KeyRate 2, a key's third request in a second is
// 429 rate_limited with a Retry-After of 1; another key is not limited, and
// the key works again after the wait.
func TestKeyRateLimit(t *testing.T) {
	t.Parallel()
	var shift atomic.Int64 // nanoseconds after testNow
	e := setup(t, func(c *Config) {
		c.KeyRate = 2
		c.Now = func() time.Time { return testNow.Add(time.Duration(shift.Load())) }
	})
	for range 2 {
		e.wantStatus(e.do("GET", "/v1/series", e.read, ""), 200)
	}
	r := e.do("POST", "/v1/series/CH1/invoices", e.read, issueJSON(""))
	e.wantError(r, 429, "rate_limited")
	if r.header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q, want 1", r.header.Get("Retry-After"))
	}
	e.wantStatus(e.do("GET", "/v1/series", e.all, ""), 200)
	shift.Store(int64(time.Second))
	e.wantStatus(e.do("GET", "/v1/series", e.read, ""), 200)
	// Off by default.
	d := setup(t)
	for range 20 {
		d.wantStatus(d.do("GET", "/v1/series", d.read, ""), 200)
	}
}

// TestKeyRateCountsInvoices: --rate-limit counts invoices where a request
// carries many: a batch of 8 spends 8 of a key's 10 tokens, so a batch of
// 3 right after is refused whole (429, nothing numbered), and a batch
// larger than the bucket is refused with a message saying the most one
// request may carry.
func TestKeyRateCountsInvoices(t *testing.T) {
	t.Parallel()
	var shift atomic.Int64 // nanoseconds after testNow
	e := setup(t, func(c *Config) {
		c.KeyRate = 10
		c.Now = func() time.Time { return testNow.Add(time.Duration(shift.Load())) }
	})
	batch := func(tag string, n int) resp {
		items := make([]string, n)
		for i := range items {
			items[i] = batchItemJSON(fmt.Sprintf("%s-%d", tag, i), "")
		}
		return e.do("POST", "/v1/series/CH1/invoices/batch", e.issue, batchJSON(items))
	}
	e.wantStatus(batch("a", 8), 200)
	e.wantError(batch("b", 3), 429, "rate_limited")
	shift.Store(int64(10 * time.Second))
	r := batch("c", 11)
	e.wantError(r, 429, "over_rate_limit")
	if !strings.Contains(string(r.body), "at most 10 invoices") {
		t.Fatalf("the refusal of a batch larger than the bucket does not say the most allowed: %s", r.body)
	}
	var n int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM invoices`).Scan(&n); err != nil || n != 8 {
		t.Fatalf("%d invoices numbered (%v), want the first batch's 8 alone", n, err)
	}
}
