package console_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/internal/testwait"
)

// The console's requests are in the API's request log and HTTP metrics
// (serve wraps the console in api.Server.Observe): sign-in, pages and
// made-up paths each get a line with the route pattern, status and, once
// signed in, the seller, never a query or a form value; the metrics label
// them by pattern, unmatched for a path no pattern knows.
func TestConsoleRequestsAreLoggedAndCounted(t *testing.T) {
	t.Parallel()
	var logged testwait.Buffer
	m := metrics.New()
	f := setup(t, func(c *api.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logged, nil))
		c.LogRequests, c.Metrics = true, m
	})
	c := client(t)
	signIn(t, f, c, f.all)
	get(t, c, f.url+"/console/series/CH1/2026-27?number=SECRET-NUMBER")
	get(t, c, f.url+"/console/no/such/page/9")

	type line struct {
		Msg, Method, Route, Seller, Series string
		RequestID                          string `json:"request_id"`
		Status                             int
	}
	var lines []line
	for _, l := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
		var x line
		if err := json.Unmarshal([]byte(l), &x); err == nil && x.Msg == "request" {
			lines = append(lines, x)
		}
		if strings.Contains(l, "SECRET-NUMBER") || strings.Contains(l, f.all) {
			t.Errorf("the log holds a query or a key: %s", l)
		}
	}
	want := []line{
		{Method: "GET", Route: "/console/login", Status: http.StatusOK},
		{Method: "POST", Route: "/console/login", Status: http.StatusSeeOther, Seller: sellerGSTIN},
		{Method: "GET", Route: "/console/{$}", Status: http.StatusOK, Seller: sellerGSTIN},
		{Method: "GET", Route: "/console/series/{code}/{fy}", Status: http.StatusOK, Seller: sellerGSTIN, Series: "CH1"},
		{Method: "GET", Route: "/console/", Status: http.StatusNotFound},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d request lines, want %d:\n%s", len(lines), len(want), logged.String())
	}
	for i, w := range want {
		got := lines[i]
		if got.Method != w.Method || got.Route != w.Route || got.Status != w.Status || got.Seller != w.Seller || got.Series != w.Series || len(got.RequestID) != 32 {
			t.Errorf("line %d: %+v, want %+v", i, got, w)
		}
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{`route="/console/series/{code}/{fy}"`, `route="/console/login"`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("the metrics lack %s", want)
		}
	}
}

// A session cookie costs a database lookup: one that names no session
// spends a failure of the client address's budget, and an address that
// has spent its budget gets 429 before any lookup, as for API keys.
func TestMadeUpSessionsSpendTheFailureBudget(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *api.Config) { c.FailureRate, c.FailureBurst = 0.01, 3 })
	madeUp := func() *http.Client {
		c := client(t)
		u, _ := url.Parse(f.url + "/console/")
		c.Jar.SetCookies(u, []*http.Cookie{{Name: "invoiced_session", Value: strings.Repeat("A", 43), Path: "/console/"}})
		return c
	}
	for i := range 3 {
		if p := get(t, madeUp(), f.url+"/console/"); p.status != http.StatusSeeOther {
			t.Fatalf("made-up cookie %d: %d, want the sign-in redirect", i, p.status)
		}
	}
	if p := get(t, madeUp(), f.url+"/console/"); p.status != http.StatusTooManyRequests {
		t.Fatalf("a made-up cookie past the budget: %d, want 429", p.status)
	}
}
