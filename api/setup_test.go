package api

import (
	"context"
	"encoding/json"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/sellers"
	"github.com/jackc/pgx/v5/pgxpool"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// testNow is 2026-11-29 10:00 IST, the default clock of the tests.
var testNow = time.Date(2026, 11, 29, 10, 0, 0, 0, gst.IST)

const (
	sellerGSTIN = "27AAPFU0939F1ZV" // Maharashtra
	otherGSTIN  = "29AABCR1718E1ZL" // Karnataka
	buyerGSTIN  = "29AAGCB7383J1Z4" // Karnataka
	// buyerAddress is the registered buyer's address as a request member
	// (Rule 46(d)), its state left for the GSTIN to give.
	buyerAddress = `"address":{"line1":"14 Residency Road","city":"Bengaluru","pin":"560025"}`
)

// env is what a test needs: a server on a fresh database, a seller with
// keys and a series CH1 (CH1/{FY}/{SEQ:5}).
type env struct {
	t      *testing.T
	url    string
	pool   *pgxpool.Pool
	client *http.Client
	seller gst.Seller
	all    string // issue, read, manage
	read   string // read only
	issue  string // issue only
	cfg    Config
	srv    *Server
}

// setup starts a server on a fresh database. opts adjust its Config.
func setup(t *testing.T, opts ...func(*Config)) *env {
	t.Helper()
	pool := dbtest.New(t)
	seller := testfactory.Seller(t, pool, &testfactory.SellerOpts{GSTIN: sellerGSTIN, Name: "Chai & Co <Pune>"})
	e := &env{t: t, pool: pool, seller: seller}
	e.all = mustKey(t, pool, seller.ID, apikey.ScopeIssue, apikey.ScopeRead, apikey.ScopeManage)
	e.read = mustKey(t, pool, seller.ID, apikey.ScopeRead)
	e.issue = mustKey(t, pool, seller.ID, apikey.ScopeIssue)
	testfactory.Series(t, pool, seller, &testfactory.SeriesOpts{Code: "CH1", Format: "CH1/{FY}/{SEQ:5}", Shop: "Pune station stall"})
	// On Citus (make test-citus) the server runs as invoiced serve does
	// there: group commit batches one seller per transaction.
	e.cfg = Config{Pool: pool, Now: func() time.Time { return testNow }, Citus: dbtest.Citus(t)}
	for _, o := range opts {
		o(&e.cfg)
	}
	e.srv = New(e.cfg)
	ts := httptest.NewServer(e.srv.Handler())
	t.Cleanup(ts.Close)
	e.url = ts.URL
	e.client = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	t.Cleanup(e.client.CloseIdleConnections)
	return e
}

func mustKey(t *testing.T, db db.Querier, sellerID int64, scopes ...string) string {
	t.Helper()
	k, err := apikey.Create(t.Context(), db, sellerID, scopes)
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	return k
}

// resp is an HTTP answer.
type resp struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request with key (none if empty) and a JSON body (none if
// empty); extra holds header name/value pairs.
func (e *env) do(method, path, key, body string, extra ...string) resp {
	e.t.Helper()
	r, err := e.try(method, path, key, body, extra...)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// doHost sends a request without key or body, naming host in its Host
// line ("" for the server's own).
func (e *env) doHost(method, path, host string) resp {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	res, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp{res.StatusCode, res.Header, b}
}

func (e *env) try(method, path, key, body string, extra ...string) (resp, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		return resp{}, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Set(extra[i], extra[i+1])
	}
	res, err := e.client.Do(req)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return resp{res.StatusCode, res.Header, b}, err
}

// issueBody returns a valid issue request dated date ("" for none).
func issueJSON(date string) string {
	d := ""
	if date != "" {
		d = `"invoice_date":"` + date + `",`
	}
	return `{` + d + `"items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]}`
}

// invoiceOut is the part of an invoice answer tests look at.
type invoiceOut struct {
	ID            string `json:"id"`
	Number        string `json:"number"`
	Serial        int64  `json:"serial"`
	FY            string `json:"fy"`
	Series        string `json:"series"`
	DocType       string `json:"doc_type"`
	InvoiceDate   string `json:"invoice_date"`
	IssuedAt      string `json:"issued_at"`
	Status        string `json:"status"`
	PublicID      string `json:"public_id"`
	PlaceOfSupply string `json:"place_of_supply"`
	Totals        struct {
		Taxable, CGST, SGST, IGST, Total string
	} `json:"totals"`
	CancelledAt  string `json:"cancelled_at"`
	CancelReason string `json:"cancel_reason"`
}

func (e *env) wantStatus(r resp, status int) {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
}

func (e *env) invoice(r resp) invoiceOut {
	e.t.Helper()
	var out invoiceOut
	if err := json.Unmarshal(r.body, &out); err != nil {
		e.t.Fatalf("decode invoice %s: %v", r.body, err)
	}
	return out
}

// mustIssue issues a valid invoice on code dated date and returns it.
func (e *env) mustIssue(code, date string) invoiceOut {
	e.t.Helper()
	r := e.do("POST", "/v1/series/"+code+"/invoices", e.all, issueJSON(date))
	e.wantStatus(r, http.StatusCreated)
	return e.invoice(r)
}

// wantError checks status and error code, and that the body has exactly the
// error shape.
func (e *env) wantError(r resp, status int, code string) {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	var body map[string]map[string]string
	dec := json.NewDecoder(strings.NewReader(string(r.body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || len(body) != 1 || len(body["error"]) != 2 {
		e.t.Fatalf("error body %s does not have the shape {\"error\":{\"code\",\"message\"}} (%v)", r.body, err)
	}
	if got := body["error"]["code"]; got != code {
		e.t.Fatalf("error code %q, want %q; body %s", got, code, r.body)
	}
	if body["error"]["message"] == "" {
		e.t.Fatalf("empty error message: %s", r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		e.t.Fatalf("Content-Type %q", ct)
	}
	if status == http.StatusServiceUnavailable && r.header.Get("Retry-After") == "" {
		e.t.Fatalf("503 without Retry-After")
	}
}

// setContact sets the seller's address and phone, printed on receipts.
func (e *env) setContact(address, phone string) {
	e.t.Helper()
	if _, err := sellers.Update(e.t.Context(), e.pool, sellerGSTIN, sellers.Changes{Address: &address, Phone: &phone}); err != nil {
		e.t.Fatal(err)
	}
}

// createSeries creates a series through the API.
func (e *env) createSeries(code, docType, format string) {
	e.t.Helper()
	r := e.do("POST", "/v1/series", e.all, `{"code":"`+code+`","doc_type":"`+docType+`","format":"`+format+`"}`)
	e.wantStatus(r, http.StatusCreated)
}

func pgxpoolNewLazy(url string) (*pgxpool.Pool, error) {
	return pgxpool.New(context.Background(), url)
}

func startServer(t *testing.T, cfg Config) string {
	t.Helper()
	ts := httptest.NewServer(New(cfg).Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// plainCommitter gives the server a Committer of the plain strategy
// (invoice.NewPlainCommitter: plain transactions, not predicted, as a
// library user with one connection has it), on the fields CommitterConfig
// returns. Pass it after the options it depends on.
func plainCommitter(t *testing.T) func(*Config) {
	return func(c *Config) {
		if c.Metrics == nil {
			c.Metrics = metrics.New() // the server's and the Committer's, one set
		}
		committer, err := invoice.NewPlainCommitter(c.Pool, c.CommitterConfig())
		if err != nil {
			t.Fatal(err)
		}
		c.Committer = committer
	}
}
