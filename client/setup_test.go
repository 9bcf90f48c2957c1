package client

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
)

const sellerGSTIN = "27AAPFU0939F1ZV"

// env is a real server on a fresh database with a seller, series CH1 and
// CH2, and keys; proxy stands in front of it and injects faults.
type env struct {
	url   string // the server
	all   string // issue, read, manage
	issue string // issue only
	proxy *faultProxy
}

func setup(t *testing.T) *env {
	t.Helper()
	pool := dbtest.New(t)
	ctx := t.Context()
	seller := testfactory.Seller(t, pool, &testfactory.SellerOpts{GSTIN: sellerGSTIN, Name: "Client Test Stall"})
	for _, code := range []string{"CH1", "CH2"} {
		testfactory.Series(t, pool, seller, &testfactory.SeriesOpts{Code: code, Format: code + "/{FY}/{SEQ:5}"})
	}
	e := &env{}
	var err error
	if e.all, err = apikey.Create(ctx, pool, seller.ID, []string{apikey.ScopeIssue, apikey.ScopeRead, apikey.ScopeManage}); err != nil {
		t.Fatal(err)
	}
	if e.issue, err = apikey.Create(ctx, pool, seller.ID, []string{apikey.ScopeIssue}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(api.New(api.Config{Pool: pool, FailureRate: -1, WebhookAllowPrivate: true}).Handler())
	t.Cleanup(ts.Close)
	e.url = ts.URL
	e.proxy = &faultProxy{backend: ts.URL, client: &http.Client{}}
	ps := httptest.NewServer(e.proxy)
	t.Cleanup(ps.Close)
	e.proxy.url = ps.URL
	return e
}

// fastClient returns a client of url with short backoff.
func fastClient(url, key string) *Client {
	return New(url, key, WithBackoff(5*time.Millisecond, 50*time.Millisecond))
}

func sale() IssueRequest {
	return IssueRequest{Items: []ItemInput{{Description: "Masala chai", HSN: "0902", Quantity: "2", UnitPrice: "10.00", GSTRate: "5"}}}
}

// fault is what the proxy does with one request.
type fault int

const (
	pass        fault = iota // forward and answer
	loseAnswer               // forward, then drop the connection
	refuse                   // drop the connection without forwarding
	synthesized              // answer status/body without forwarding
)

type step struct {
	fault      fault
	status     int
	body       string
	retryAfter string
}

// attempt is one request the proxy saw.
type attempt struct {
	method, path, key string
	body              []byte
	at                time.Time
}

// faultProxy forwards to backend, doing to the n-th request what plan[n]
// says (pass once the plan is used up, or always do forever when set).
type faultProxy struct {
	backend string
	url     string
	client  *http.Client

	mu       sync.Mutex
	plan     []step
	forever  *step
	attempts []attempt
}

func (p *faultProxy) set(forever *step, plan ...step) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plan, p.forever, p.attempts = plan, forever, nil
}

func (p *faultProxy) seen() []attempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]attempt(nil), p.attempts...)
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.attempts = append(p.attempts, attempt{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), body, time.Now()})
	s := step{fault: pass}
	switch {
	case len(p.plan) > 0:
		s, p.plan = p.plan[0], p.plan[1:]
	case p.forever != nil:
		s = *p.forever
	}
	p.mu.Unlock()
	switch s.fault {
	case refuse:
		hangUp(w)
		return
	case synthesized:
		if s.retryAfter != "" {
			w.Header().Set("Retry-After", s.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.status)
		_, _ = io.WriteString(w, s.body)
		return
	}
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, p.backend+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	res, err := p.client.Do(req)
	if err != nil {
		hangUp(w)
		return
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if s.fault == loseAnswer {
		hangUp(w)
		return
	}
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(b)
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, as a killed server gives
		}
		_ = conn.Close()
	}
}
