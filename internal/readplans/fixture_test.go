package readplans_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/console"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/jackc/pgx/v5/pgxpool"
)

// start is the fixtures' first day: 20 November 2026, 10:00 IST.
var start = time.Date(2026, 11, 20, 10, 0, 0, 0, gst.IST)

// clock is a settable clock.
type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Time  { return time.Unix(0, c.t.Load()) }
func (c *clock) set(t time.Time) { c.t.Store(t.UnixNano()) }

// server is the API and the console on one test server over pool.
type server struct {
	url   string
	pool  *pgxpool.Pool
	plans *plans
	clock *clock
}

// newServer starts the API and the console on a fresh database whose
// plans are recorded, with a pool of maxConns connections.
func newServer(t *testing.T, maxConns int32) *server {
	t.Helper()
	pool, p := explainedPool(t, maxConns)
	s := &server{pool: pool, plans: p, clock: &clock{}}
	s.clock.set(start)
	apiSrv := api.New(api.Config{Pool: pool, Now: s.clock.now, WebhookAllowPrivate: true, BackdateDays: 400,
		MaxExports: 64, MaxExportsPerSeller: 64, KeyCacheTTL: time.Hour})
	mux := http.NewServeMux()
	mux.Handle("/console/", console.New(console.Config{Pool: pool, Keys: apiSrv, Now: s.clock.now}))
	mux.Handle("/", apiSrv.Handler())
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	s.url = ts.URL
	return s
}

// tenant is a seller with a key of every scope and a console session.
type tenant struct {
	seller  gst.Seller
	key     string
	console *http.Client
}

// newTenant makes a seller with GSTIN gstin, a key of every scope for it
// and a console client (signIn signs it in).
func (s *server) newTenant(t *testing.T, gstin string) *tenant {
	t.Helper()
	seller := testfactory.Seller(t, s.pool, &testfactory.SellerOpts{GSTIN: gstin, Name: "Seller " + gstin})
	return s.tenantOf(t, seller)
}

// tenantOf gives seller a key of every scope and a console client.
func (s *server) tenantOf(t *testing.T, seller gst.Seller) *tenant {
	t.Helper()
	key, err := apikey.Create(t.Context(), s.pool, seller.ID, []string{apikey.ScopeIssue, apikey.ScopeRead, apikey.ScopeManage})
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 5 * time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &tenant{seller: seller, key: key, console: c}
}

// signIn signs tn in to the console (again), as of the server's clock.
func (s *server) signIn(t *testing.T, tn *tenant) {
	t.Helper()
	res := s.get(t, tn, "/console/login")
	m := loginTokenRE.FindSubmatch(res)
	if m == nil {
		t.Fatalf("no login token in %.300s", res)
	}
	r, err := tn.console.PostForm(s.url+"/console/login", url.Values{"key": {tn.key}, "login_token": {string(m[1])}})
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("console sign-in: %d", r.StatusCode)
	}
}

var loginTokenRE = regexp.MustCompile(`name="login_token" value="([^"]+)"`)

// get fetches path (under /console/ with tn's session, elsewhere with its
// key) and returns the body; the test fails on any answer but 200.
func (s *server) get(t *testing.T, tn *tenant, path string) []byte {
	t.Helper()
	status, body := s.do(t, tn, http.MethodGet, path, "")
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %.400s", path, status, body)
	}
	return body
}

// do sends a request with tn's key (its console session under /console/)
// and returns the status and body.
func (s *server) do(t *testing.T, tn *tenant, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(path, "/console/") {
		req.Header.Set("Authorization", "Bearer "+tn.key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := tn.console.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return res.StatusCode, b
}

// issueBurst issues n invoices of three lines each in series code through
// the batch route, 500 a request, moving the clock on a day after each
// request (from start), and returns the public id of the last.
func (s *server) issueBurst(t *testing.T, tn *tenant, code string, n int) string {
	t.Helper()
	var last string
	for done, day := 0, 0; done < n; day++ {
		s.clock.set(start.AddDate(0, 0, day))
		k := min(500, n-done)
		var b bytes.Buffer
		b.WriteString(`{"invoices":[`)
		for i := range k {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"idempotency_key":"%s-%d","buyer":{"gstin":"29AAGCB7383J1Z4","name":"Bangalore Traders","address":{"line1":"14 Residency Road","city":"Bengaluru","pin":"560025"}},"place_of_supply":"29","items":[`, code, done+i)
			for j := range 3 {
				if j > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"description":"Masala chai %d","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}`, j)
			}
			b.WriteString(`]}`)
		}
		b.WriteString(`]}`)
		status, body := s.do(t, tn, http.MethodPost, "/v1/series/"+code+"/invoices/batch", b.String())
		if status != http.StatusOK {
			t.Fatalf("batch: %d %.300s", status, body)
		}
		var res struct {
			Results []struct {
				Status  int `json:"status"`
				Invoice struct {
					PublicID string `json:"public_id"`
				} `json:"invoice"`
			} `json:"results"`
		}
		if err := json.Unmarshal(body, &res); err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Results {
			if r.Status != http.StatusCreated {
				t.Fatalf("batch item: %d", r.Status)
			}
			last = r.Invoice.PublicID
		}
		done += k
	}
	return last
}

// noAutovacuum keeps autovacuum (and so autoanalyze) off every table that
// invoices fill, so that they stay as a burst leaves them: never analysed.
func noAutovacuum(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	for _, tbl := range []string{"invoices", "chain_records", "series_counters", "events", "webhook_deliveries", "idempotency_keys", "series", "sellers", "api_keys", "webhooks", "console_sessions", "period_locks", "series_openings", "series_leases"} {
		if _, err := pool.Exec(t.Context(), `ALTER TABLE `+tbl+` SET (autovacuum_enabled = off)`); err != nil {
			t.Fatal(err)
		}
	}
}
