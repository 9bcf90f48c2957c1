package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/servetest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	sellerGSTIN = "27AAPFU0939F1ZV"
	otherGSTIN  = "29AABCR1718E1ZL"
)

// bin is the invoiced binary, built once by TestMain.
var bin *servetest.Binary

func TestMain(m *testing.M) { servetest.Main(m, "faults", &bin) }

// cli runs the invoiced binary with DATABASE_URL=dbURL and returns stdout.
func cli(t testing.TB, dbURL string, args ...string) string {
	t.Helper()
	return bin.CLI(t, dbURL, args...)
}

// fixture is a seeded database: one seller, series CH1 and CH2, a key with
// every scope.
type fixture struct {
	dbURL string
	key   string
}

// seed migrates dbURL and creates the seller, two series and a key through
// the command line.
func seed(t testing.TB, dbURL string) fixture {
	t.Helper()
	cli(t, dbURL, "migrate")
	cli(t, dbURL, "sellers", "add", "--gstin", sellerGSTIN, "--name", "Fault Test Stall")
	for _, code := range []string{"CH1", "CH2"} {
		cli(t, dbURL, "series", "add", "--gstin", sellerGSTIN, "--code", code, "--format", code+"/{FY}/{SEQ:6}")
	}
	key := strings.TrimSpace(cli(t, dbURL, "keys", "add", "--gstin", sellerGSTIN, "--scopes", "issue,read,manage"))
	if !strings.HasPrefix(key, "ik_") {
		t.Fatalf("keys add printed %q", key)
	}
	return fixture{dbURL: dbURL, key: key}
}

// ---------------------------------------------------------------- server ---

// server is one `invoiced serve` process started by the test.
type server = servetest.Server

// startServer starts `invoiced serve` on addr (127.0.0.1:0 for a free
// port); see servetest.Binary.Start.
func startServer(t testing.TB, dbURL, addr string, flags ...string) *server {
	t.Helper()
	return bin.Start(t, dbURL, addr, flags...)
}

// ----------------------------------------------------------------- client ---

// client issues invoices the way a careful point-of-sale would: one
// Idempotency-Key per invoice, retried with the same key and body on
// transport errors, 5xx and 409 (respecting Retry-After), until a 201 or a
// definite refusal or until its deadline.
type client struct {
	h    *History
	key  string // API key
	base atomic.Value
	http *http.Client
	tag  string // distinguishes keys of several tests on one database
}

func newClient(h *History, apiKey, base, tag string) *client {
	c := &client{h: h, key: apiKey, tag: tag,
		http: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
			MaxIdleConnsPerHost: 64, DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		}}}
	c.base.Store(base)
	return c
}

func (c *client) close() { c.http.CloseIdleConnections() }

// body is the invoice request for key: the key is the item description, so
// that a stored invoice can be traced to its request.
func body(key string) string {
	return `{"items":[{"description":"` + key + `","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]}`
}

// answer is what the checker needs from a 201 (and the invoice's id, for
// a test that cancels it).
type answer struct {
	ID       string `json:"id"`
	Number   string `json:"number"`
	Serial   int64  `json:"serial"`
	FY       string `json:"fy"`
	Series   string `json:"series"`
	IssuedAt string `json:"issued_at"`
}

// attempt sends one POST for key to series code and records it.
func (c *client) attempt(ctx context.Context, id int, code, key string) (status int, retryAfter time.Duration, latency time.Duration) {
	c.h.Add(Op{Type: Invoke, Client: id, Key: key, Series: code})
	start := time.Now()
	op := Op{Client: id, Key: key, Series: code}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base.Load().(string)+"/v1/series/"+code+"/invoices", strings.NewReader(body(key)))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	// net/http retries a request that carries an Idempotency-Key on a fresh
	// connection when the first one breaks, silently; without GetBody it
	// cannot, so every cut shows in the history as an unknown outcome.
	req.GetBody = nil
	res, err := c.http.Do(req)
	var b []byte
	if err == nil {
		b, err = io.ReadAll(res.Body)
		res.Body.Close()
	}
	latency = time.Since(start)
	if err != nil {
		op.Type, op.Err = Unknown, err.Error()
		c.h.Add(op)
		return 0, 0, latency
	}
	op.Status = res.StatusCode
	switch {
	case res.StatusCode == http.StatusCreated:
		var a answer
		if err := json.Unmarshal(b, &a); err != nil || a.Number == "" {
			op.Type, op.Err = Unknown, fmt.Sprintf("201 with an unreadable body %q", b)
			break
		}
		op.Type, op.Number, op.Serial, op.FY, op.ID = OK, a.Number, a.Serial, a.FY, a.ID
		op.Series = a.Series
		op.IssuedAt, _ = time.Parse(time.RFC3339Nano, a.IssuedAt)
		op.Replayed = res.Header.Get("Idempotent-Replayed") == "true"
	case res.StatusCode >= 500:
		op.Type, op.Err = Unknown, string(b)
		if ra := res.Header.Get("Retry-After"); ra != "" {
			var n int
			fmt.Sscanf(ra, "%d", &n)
			retryAfter = time.Duration(n) * time.Second
		}
	default:
		op.Type, op.Err = Fail, string(b)
	}
	c.h.Add(op)
	return res.StatusCode, retryAfter, latency
}

// issue runs key to completion: it returns true on a 201, false on a
// definite refusal (4xx other than 409) or when deadline passes.
func (c *client) issue(ctx context.Context, id int, code, key string, deadline time.Time) bool {
	for i := 0; i < 1000 && time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		status, ra, _ := c.attempt(ctx, id, code, key)
		switch {
		case status == http.StatusCreated:
			return true
		case status == 0 || status >= 500 || status == http.StatusConflict:
			// Respect Retry-After, but bounded so the test stays short.
			wait := min(max(ra/4, 50*time.Millisecond), 500*time.Millisecond)
			if ra == 0 {
				wait = 50 * time.Millisecond
			}
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		default:
			return false
		}
	}
	return false
}

// load runs workers clients issuing invoices until stop is closed; client
// w uses series codes[w % len(codes)], as each till has its own series; each then finishes its current key, retrying
// until finish. It returns when every worker is done.
type load struct {
	wg     sync.WaitGroup
	stop   chan struct{}
	issued atomic.Int64
	gaveUp atomic.Int64
}

func startLoad(ctx context.Context, c *client, workers int, codes []string, finish func() time.Time) *load {
	l := &load{stop: make(chan struct{})}
	for w := 0; w < workers; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; n < 100000; n++ {
				select {
				case <-l.stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				code := codes[w%len(codes)]
				key := fmt.Sprintf("%s-w%02d-%05d", c.tag, w, n)
				if c.issue(ctx, w, code, key, finish()) {
					l.issued.Add(1)
				} else {
					l.gaveUp.Add(1)
				}
			}
		}()
	}
	return l
}

// end stops new keys and waits (bounded) for the workers to finish theirs.
func (l *load) end(t testing.TB, timeout time.Duration) {
	t.Helper()
	close(l.stop)
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("load did not finish within %s", timeout)
	}
}

// waitIssued waits until at least n more invoices were acknowledged than
// when it was called, or timeout.
func (l *load) waitIssued(n int64, timeout time.Duration) bool {
	target := l.issued.Load() + n
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if l.issued.Load() >= target {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// ------------------------------------------------------------------ check ---

// storedInvoices reads every invoice of the seller with the tag of its
// first item.
func storedInvoices(t testing.TB, dbURL string) []Stored {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var conn *pgx.Conn
	var err error
	for i := 0; i < 50; i++ { // the database may be finishing its recovery
		if conn, err = pgx.Connect(ctx, dbURL); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("connect to check: %v", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT s.code, i.fy, i.serial, i.number, i.issued_at, i.items->0->>'description'
		FROM invoices i JOIN series s ON s.seller_id = i.seller_id AND s.id = i.series_id
		ORDER BY s.code, i.fy, i.serial`)
	if err != nil {
		t.Fatalf("read invoices: %v", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Stored, error) {
		var s Stored
		err := r.Scan(&s.Series, &s.FY, &s.Serial, &s.Number, &s.IssuedAt, &s.Key)
		return s, err
	})
	if err != nil {
		t.Fatalf("read invoices: %v", err)
	}
	return out
}

// verdict checks the history against the database, logs the fixed-format
// summary and fails the test on any violation.
func verdict(t testing.TB, name string, h *History, dbURL string, opt CheckOptions) Report {
	t.Helper()
	r := Check(h.Ops(), storedInvoices(t, dbURL), opt)
	t.Log(r.Line(name))
	for _, v := range r.Violations {
		t.Errorf("invariant broken: %s", v)
	}
	if n := r.Status[http.StatusInternalServerError]; n > 0 {
		t.Errorf("%d answers were 500: faults must give 503, never 500", n)
	}
	return r
}

// ---------------------------------------------------------------- helpers ---

// get fetches path from base and returns the status, header and latency.
func get(base, path string) (int, http.Header, time.Duration) {
	c := &http.Client{Timeout: 10 * time.Second}
	start := time.Now()
	res, err := c.Get(base + path)
	if err != nil {
		return 0, nil, time.Since(start)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, res.Header, time.Since(start)
}

// sharedDB returns a fresh migrated, seeded database on TEST_DATABASE_URL.
func sharedDB(t testing.TB) fixture {
	t.Helper()
	return seed(t, dbtest.NewURL(t))
}

// hostPort returns the host:port of a PostgreSQL URL.
func hostPort(t testing.TB, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// withHost returns raw with its host:port replaced.
func withHost(raw, hostport string) string {
	u, _ := url.Parse(raw)
	u.Host = hostport
	return u.String()
}

// logInternalErrors logs the servers' internal errors when the test failed.
func logInternalErrors(t testing.TB, servers ...*server) {
	if !t.Failed() {
		return
	}
	for _, s := range servers {
		if e := s.InternalErrors(); e != "" {
			t.Logf("server %s internal errors:\n%s", s.Addr, e)
		}
	}
}

// openPool returns a pool on dbURL with the session settings invoiced needs
// on a Citus coordinator (db.ForCitus) when the database under test is one,
// as invoiced serve and dbtest.New set them. It fails the test when dbURL
// cannot be parsed or connected to.
func openPool(t *testing.T, dbURL string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if dbtest.Citus(t) {
		db.ForCitus(cfg.ConnConfig)
	}
	p, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
