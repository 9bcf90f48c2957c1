package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/metrics"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs /metrics from the server and returns the metric families.
func (e *env) scrape() map[string]*dto.MetricFamily {
	e.t.Helper()
	r := e.do("GET", "/metrics", "", "")
	e.wantStatus(r, http.StatusOK)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		e.t.Fatalf("parse /metrics: %v\n%s", err, r.body)
	}
	return fams
}

// value returns the sum over the series of family name whose labels
// include want (a counter's value, a histogram's count; sum = true for a
// histogram's sum).
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string, sum bool) float64 {
	var v float64
	f := fams[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		for k, wv := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == wv {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			v += m.Counter.GetValue()
		case m.Gauge != nil:
			v += m.Gauge.GetValue()
		case m.Histogram != nil && sum:
			v += m.Histogram.GetSampleSum()
		case m.Histogram != nil:
			v += float64(m.Histogram.GetSampleCount())
		}
	}
	return v
}

// TestMetricsCountWhatHappened issues N invoices concurrently (some with
// keys, each of those replayed once), cancels one and probes an unknown
// path, and checks that the counters grew by exactly that: issued by N,
// the batch sizes sum to N, replays and cancellations by their counts, and
// that no label names the series or the seller.
func TestMetricsCountWhatHappened(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.ExposeMetrics = true })
	before := e.scrape()
	const n, keyed = 40, 10
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := range n {
		wg.Go(func() {
			var extra []string
			if i < keyed {
				extra = []string{"Idempotency-Key", fmt.Sprintf("m-%d", i)}
			}
			r, err := e.try("POST", "/v1/series/CH1/invoices", e.all, issueJSON(""), extra...)
			if err != nil || r.status != http.StatusCreated {
				t.Errorf("issue %d: %v %d %s", i, err, r.status, r.body)
				return
			}
			var out invoiceOut
			json.Unmarshal(r.body, &out)
			ids[i] = out.ID
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i := range keyed {
		r := e.do("POST", "/v1/series/CH1/invoices", e.all, issueJSON(""), "Idempotency-Key", fmt.Sprintf("m-%d", i))
		e.wantStatus(r, http.StatusCreated)
		if r.header.Get(headerReplayed) != "true" {
			t.Fatalf("key m-%d was not replayed", i)
		}
	}
	e.wantStatus(e.do("POST", "/v1/invoices/"+ids[0]+"/cancel", e.all, `{"reason":"typo"}`), http.StatusOK)
	e.wantStatus(e.do("GET", "/no/such/"+sellerGSTIN, "", ""), http.StatusNotFound)
	after := e.scrape()

	grew := func(name string, labels map[string]string, sum bool) float64 {
		return value(after, name, labels, sum) - value(before, name, labels, sum)
	}
	inv := map[string]string{"doc_type": "invoice"}
	if g := grew("invoiced_invoices_issued_total", inv, false); g != n {
		t.Errorf("invoiced_invoices_issued_total grew by %v, want exactly %d", g, n)
	}
	if g := grew("invoiced_batch_size", nil, true); g != n {
		t.Errorf("the batch sizes sum to %v, want %d (every issued invoice in exactly one batch)", g, n)
	}
	if g := grew("invoiced_batch_commit_duration_seconds", nil, false); g != grew("invoiced_batch_size", nil, false) || g < 1 {
		t.Errorf("%v commit durations for %v batches", g, grew("invoiced_batch_size", nil, false))
	}
	if g := grew("invoiced_idempotent_replays_total", nil, false); g != keyed {
		t.Errorf("invoiced_idempotent_replays_total grew by %v, want %d", g, keyed)
	}
	if g := grew("invoiced_invoices_cancelled_total", inv, false); g != 1 {
		t.Errorf("invoiced_invoices_cancelled_total grew by %v, want 1", g)
	}
	if g := grew("invoiced_http_requests_total", map[string]string{"route": "/v1/series/:code/invoices", "method": "POST", "code": "201"}, false); g != n+keyed {
		t.Errorf("requests POST /v1/series/:code/invoices 201 grew by %v, want %d", g, n+keyed)
	}
	if g := grew("invoiced_http_requests_total", map[string]string{"route": unmatchedRoute, "code": "404"}, false); g != 1 {
		t.Errorf("unmatched 404 requests grew by %v, want 1", g)
	}
	if g := grew("invoiced_http_request_duration_seconds", map[string]string{"route": "/v1/invoices/:id/cancel", "method": "POST"}, false); g != 1 {
		t.Errorf("cancel durations grew by %v, want 1", g)
	}
	if g := grew("invoiced_lock_wait_seconds", nil, false); g < 1 {
		t.Errorf("no counter lock wait was recorded")
	}
	if v := value(after, "invoiced_db_pool_max_conns", nil, false); v != 0 {
		t.Errorf("pool metrics without WatchPool: max_conns %v", v)
	}
	for name, f := range after {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "CH1") || strings.Contains(l.GetValue(), sellerGSTIN) {
					t.Errorf("%s has a label %s=%q naming a series or a seller", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
}

// TestMetricsMisprediction: a counter row moved by another process makes
// this one's next predicted transaction fail; it is counted and the
// invoice is still issued. On Citus, where the Committer does not predict,
// the invoice is issued the same and nothing is counted.
func TestMetricsMisprediction(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.ExposeMetrics = true })
	e.mustIssue("CH1", "") // ordinary path: this process now knows the row
	other := httptest.NewServer(New(Config{Pool: e.pool, Now: e.cfg.Now, Citus: e.cfg.Citus}).Handler())
	defer other.Close()
	req, _ := http.NewRequest("POST", other.URL+"/v1/series/CH1/invoices", strings.NewReader(issueJSON("")))
	req.Header.Set("Authorization", "Bearer "+e.all)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("issue on the other server: %v %v", err, res)
	}
	res.Body.Close()
	before := e.scrape()
	if got := e.mustIssue("CH1", ""); got.Serial != 3 {
		t.Fatalf("serial %d after the other process's invoice, want 3", got.Serial)
	}
	after := e.scrape()
	// On Citus too: a predicted batch is a delegated call there.
	want := 1.0
	if g := value(after, "invoiced_mispredictions_total", nil, false) - value(before, "invoiced_mispredictions_total", nil, false); g != want {
		t.Fatalf("invoiced_mispredictions_total grew by %v, want %v", g, want)
	}
}

// TestMetricsOffTheMainAddress: without ExposeMetrics or a token
// /metrics answers 404 (serve gives it a listener of its own), even to a
// key of every scope: volume and chain alerts are no tenant's business.
func TestMetricsOffTheMainAddress(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.wantError(e.do("GET", "/metrics", "", ""), http.StatusNotFound, "not_found")
	e.wantError(e.do("GET", "/metrics", e.all, ""), http.StatusNotFound, "not_found")
}

// TestMetricsBehindAToken: with MetricsToken, /metrics answers a request
// bearing the token, 401 to one without it or with another (an API key
// too), and each refusal spends the address's failure budget.
func TestMetricsBehindAToken(t *testing.T) {
	t.Parallel()
	const token = "mt_0123456789abcdef0123"
	e := setup(t, func(c *Config) { c.MetricsToken = token; c.FailureRate = 1; c.FailureBurst = 3 })
	r := e.do("GET", "/metrics", token, "")
	e.wantStatus(r, http.StatusOK)
	if !strings.Contains(string(r.body), "invoiced_chain_verify_runs_total") {
		t.Fatalf("/metrics with the token: %.300s", r.body)
	}
	for _, key := range []string{"", e.all, token + "x"} {
		e.wantError(e.do("GET", "/metrics", key, ""), http.StatusUnauthorized, "unauthorized")
	}
	e.wantError(e.do("GET", "/metrics", "wrong", ""), http.StatusTooManyRequests, "rate_limited")
}

// TestRequestLog: one JSON line per request with the server's request id
// and the client's beside it, route, status, duration, seller and series,
// and nothing of the buyer.
func TestRequestLog(t *testing.T) {
	t.Parallel()
	var buf syncBuf
	e := setup(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
		c.LogRequests = true
	})
	body := `{"buyer":{"gstin":"` + buyerGSTIN + `","name":"Bangalore Traders",` + buyerAddress + `},"place_of_supply":"29","items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]}`
	r := e.do("POST", "/v1/series/CH1/invoices?note=secret", e.all, body, headerRequestID, "req-42")
	e.wantStatus(r, http.StatusCreated)
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		if id, _ := m["request_id"].(string); m["msg"] == "request" && m["client_request_id"] == "req-42" && id != "" && id != "req-42" {
			line = m
		}
	}
	if line == nil {
		t.Fatalf("no request line for req-42 in\n%s", buf.String())
	}
	want := map[string]any{"route": "/v1/series/:code/invoices", "method": "POST", "status": float64(201), "seller": sellerGSTIN, "series": "CH1"}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("request line %s = %v, want %v", k, line[k], v)
		}
	}
	if _, ok := line["duration_ms"].(float64); !ok {
		t.Errorf("request line without duration_ms: %v", line)
	}
	for _, secret := range []string{buyerGSTIN, "Bangalore", "Masala", "secret", e.all} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("the log holds %q:\n%s", secret, buf.String())
		}
	}
}

// syncBuf is a bytes.Buffer safe for concurrent writers and readers.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// seriesCount returns how many series the families in fams hold.
func seriesCount(fams map[string]*dto.MetricFamily) int {
	n := 0
	for _, f := range fams {
		n += len(f.GetMetric())
	}
	return n
}

// TestMetricsMadeUpMethodsAddNoSeries: HTTP methods are any token a
// client likes; each made-up one must fold into one label value, so 200 of
// them to a known route and to an unknown path add no series to the
// scrape after the first.
func TestMetricsMadeUpMethodsAddNoSeries(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.ExposeMetrics = true })
	for _, path := range []string{"/v1/series", "/no/such/path"} {
		e.do("BREW0", path, "", "")
	}
	e.scrape() // so that the scrape's own series are there before
	before := seriesCount(e.scrape())
	for i := range 100 {
		for _, path := range []string{"/v1/series", "/no/such/path"} {
			r := e.do(fmt.Sprintf("BREW%d", i+1), path, "", "")
			if r.status < 400 || r.status >= 500 {
				t.Fatalf("method BREW%d %s: status %d, want 4xx", i+1, path, r.status)
			}
		}
	}
	after := e.scrape()
	if n := seriesCount(after); n != before {
		t.Fatalf("the scrape holds %d series after 200 requests with made-up methods, %d before", n, before)
	}
	if g := value(after, "invoiced_http_requests_total", map[string]string{"method": metrics.OtherMethod}, false); g < 200 {
		t.Fatalf("requests with method %q: %v, want at least 200", metrics.OtherMethod, g)
	}
}

// TestMetricsDeviceUploadsCounted: every issued and cancelled counter is
// present at 0 from the start, and invoices numbered and cancelled
// offline count with source device when their upload stores them (not
// again when a re-sent upload replays).
func TestMetricsDeviceUploadsCounted(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.ExposeMetrics = true })
	ctx := t.Context()
	before := e.scrape()
	for _, name := range []string{"invoiced_invoices_issued_total", "invoiced_invoices_cancelled_total"} {
		for _, d := range gst.DocTypes() {
			for _, src := range []string{metrics.SourceOnline, metrics.SourceDevice} {
				if !hasSeries(before, name, map[string]string{"doc_type": string(d), "source": src}) {
					t.Errorf("%s{doc_type=%q,source=%q} is not present at the start", name, d, src)
				}
			}
		}
	}
	cl := client.New(e.url, e.all)
	l, err := cl.Lease(ctx, "CH1", "till-1")
	if err != nil {
		t.Fatal(err)
	}
	now := testNow.Add(-time.Hour)
	term, err := offline.Create(filepath.Join(t.TempDir(), "till.journal"), l, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	for range 3 {
		if _, err := term.Issue(client.IssueRequest{Items: []client.ItemInput{{Description: "Masala chai", HSN: "0902", Quantity: "2", UnitPrice: "10.00", GSTRate: "5"}}}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
	}
	if _, err := term.Cancel("2", "wrong buyer"); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second sync uploads nothing new
		if _, err := term.Sync(ctx, cl); err != nil {
			t.Fatal(err)
		}
	}
	after := e.scrape()
	for _, c := range []struct {
		name, source string
		want         float64
	}{
		{"invoiced_invoices_issued_total", metrics.SourceDevice, 3},
		{"invoiced_invoices_cancelled_total", metrics.SourceDevice, 1},
		{"invoiced_invoices_issued_total", metrics.SourceOnline, 0},
	} {
		labels := map[string]string{"doc_type": "invoice", "source": c.source}
		if g := value(after, c.name, labels, false) - value(before, c.name, labels, false); g != c.want {
			t.Errorf("%s%v grew by %v, want %v", c.name, labels, g, c.want)
		}
	}
}

// hasSeries reports whether family name in fams has a series with exactly
// the labels want.
func hasSeries(fams map[string]*dto.MetricFamily, name string, want map[string]string) bool {
	for _, m := range fams[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if maps.Equal(got, want) {
			return true
		}
	}
	return false
}
