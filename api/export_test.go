package api

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
)

// bulkIssue issues n invoices dated today (testNow) in series s of seller,
// in a few large transactions.
func bulkIssue(t *testing.T, pool *pgxpool.Pool, seller gst.Seller, s gst.Series, n int) {
	t.Helper()
	ctx := t.Context()
	for done := 0; done < n; {
		k := min(500, n-done)
		drafts := make([]document.Draft, k)
		for i := range drafts {
			d, err := document.Prepare(document.Request{Items: []document.ItemInput{{
				Description: "Masala chai", HSN: "0902", Quantity: "2", UnitPrice: "10.00", GSTRate: "5"}}},
				seller, s, testNow, document.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			drafts[i] = d
		}
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := invoice.IssueTx(ctx, tx, seller, s, drafts, testNow, series.Options{Routed: dbtest.Citus(t)}); err != nil {
			tx.Rollback(ctx) // else closing the pool waits for it forever
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		done += k
	}
}

// smallPool returns a pool of at most conns connections to pool's database.
func smallPool(t *testing.T, pool *pgxpool.Pool, conns int32) *pgxpool.Pool {
	t.Helper()
	cfg := pool.Config().Copy()
	cfg.MaxConns, cfg.MinConns = conns, 0
	p, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// tinyBufferListener gives every accepted connection a 4 KiB kernel send
// buffer, so that a client that stops reading blocks the server's writes
// after a few kilobytes instead of megabytes.
type tinyBufferListener struct{ net.Listener }

func (l tinyBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

// dialTiny connects to addr with a 4 KiB receive buffer (set before the
// handshake, so the window stays small).
func dialTiny(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestStalledExportsDoNotStopIssuing opens 16 audit exports of two
// sellers that are never read, on a server whose pool has 4 connections.
// Meanwhile a third seller must issue, list and see /readyz answer as
// usual; exports past the limits get 429 too_many_exports; the stalled
// ones are cut after the stall timeout, and their slots are free again.
func TestStalledExportsDoNotStopIssuing(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	seller := func(gstin string) gst.Seller {
		return testfactory.Seller(t, pool, &testfactory.SellerOpts{GSTIN: gstin, Name: gstin})
	}
	mkSeries := func(sel gst.Seller, code string) gst.Series {
		s := testfactory.Series(t, pool, sel, &testfactory.SeriesOpts{Code: code, Format: code + "/{FY}/{SEQ:5}"})
		return s
	}
	a, c, b := seller(sellerGSTIN), seller(otherGSTIN), seller(buyerGSTIN)
	chA := mkSeries(a, "CH1")
	bulkIssue(t, pool, a, chA, 800)
	bulkIssue(t, pool, c, mkSeries(c, "CC1"), 800)
	mkSeries(b, "BB1")
	aRead, cRead := mustKey(t, pool, a.ID, apikey.ScopeRead), mustKey(t, pool, c.ID, apikey.ScopeRead)
	bAll := mustKey(t, pool, b.ID, apikey.ScopeIssue, apikey.ScopeRead)

	// One export as it runs on this machine now, read at once: the bounds
	// below grow with it, so a loaded machine slows the test instead of
	// failing it, and an idle one keeps 2 s and 10 s.
	began := time.Now()
	if err := reports.WriteAudit(t.Context(), pool, a, chA, gst.FY(2026), reports.FormatJSON, io.Discard); err != nil {
		t.Fatal(err)
	}
	ref := time.Since(began)
	stall := max(2*time.Second, 4*ref)      // long enough that no slot frees before all 16 arrive
	answered := max(10*time.Second, 20*ref) // three exports spooled at once, beside 13 refusals and seller B
	t.Logf("reference export %v: stall timeout %v, admitted exports answered within %v", ref, stall, answered)
	server := New(Config{
		Pool: smallPool(t, pool, 4), Now: func() time.Time { return testNow }, Citus: dbtest.Citus(t), RequestTimeout: 3 * time.Second,
		MaxExports: 3, MaxExportsPerSeller: 2, ExportStallTimeout: stall,
	})
	// held returns how many exports hold a slot: running, not yet cut.
	held := func() int {
		server.exports.mu.Lock()
		defer server.exports.mu.Unlock()
		return server.exports.total
	}
	srv := httptest.NewUnstartedServer(server.Handler())
	srv.Listener = tinyBufferListener{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()

	const exports = 16
	conns := make([]net.Conn, exports)
	for i := range conns {
		key, code := aRead, "CH1"
		if i%2 == 1 {
			key, code = cRead, "CC1"
		}
		conns[i] = dialTiny(t, addr)
		fmt.Fprintf(conns[i], "GET /v1/series/%s/audit?fy=2026-27&format=json HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", code, key)
	}
	// The three admitted exports hold every slot (and stall on the tiny
	// buffers), not after a guessed while but when the server says so.
	testwait.Until(t, answered, func() bool { return held() == 3 }, "three exports to hold the export slots")

	// Seller B works as if nothing else were happening: each call is
	// answered while the stalled exports still hold their slots, that is
	// before the stall timeout cuts them, so none waited for them. (A
	// fixed 2 s bound per call failed on a loaded machine; the stall
	// timeout grows with the reference export.)
	client := &http.Client{Timeout: stall}
	call := func(method, path, body string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+bAll)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		began := time.Now()
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s while exports stall: %v", method, path, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode >= 300 || held() != 3 {
			t.Fatalf("%s %s while exports stall: %d after %s, %d exports still holding their slots (want 3: answered before the stall timeout %s): %s",
				method, path, res.StatusCode, time.Since(began).Round(time.Millisecond), held(), stall, b)
		}
	}
	for range 10 {
		call("POST", "/v1/series/BB1/invoices", issueJSON(""))
	}
	call("GET", "/v1/series/BB1/invoices", "")
	call("GET", "/v1/series", "")
	call("GET", "/readyz", "")

	// Three exports run (two of one seller at most), the rest were refused.
	type outcome struct {
		status int
		length int64
		got    int64
	}
	outcomes := make([]outcome, exports)
	var wg sync.WaitGroup
	for i, conn := range conns {
		wg.Go(func() {
			conn.SetReadDeadline(time.Now().Add(answered))
			br := bufio.NewReader(conn)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Errorf("export %d: %v", i, err)
				return
			}
			o := outcome{status: res.StatusCode, length: res.ContentLength}
			if res.StatusCode == http.StatusTooManyRequests {
				b, _ := io.ReadAll(res.Body)
				if !strings.Contains(string(b), `"too_many_exports"`) || res.Header.Get("Retry-After") == "" {
					t.Errorf("export %d: 429 without too_many_exports or Retry-After: %s", i, b)
				}
			} else {
				// Read nothing until the server must have cut the stall.
				time.Sleep(stall + time.Second)
				o.got, _ = io.Copy(io.Discard, res.Body)
			}
			outcomes[i] = o
		})
	}
	wg.Wait()
	running, perSeller := 0, [2]int{}
	for i, o := range outcomes {
		switch o.status {
		case http.StatusOK:
			running++
			perSeller[i%2]++
			if o.length <= 0 || o.got >= o.length {
				t.Errorf("stalled export %d: got %d of %d bytes: it was not cut off", i, o.got, o.length)
			}
		case http.StatusTooManyRequests:
		default:
			t.Errorf("export %d: status %d", i, o.status)
		}
	}
	if running != 3 || perSeller[0] > 2 || perSeller[1] > 2 {
		t.Errorf("%d exports ran at once (%v per seller), want 3 (the global limit), at most 2 per seller", running, perSeller)
	}

	// The cut exports gave their slots back: a reading client gets it all.
	began = time.Now()
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(func() *http.Request {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/series/CH1/audit?fy=2026-27&format=csv", nil)
		req.Header.Set("Authorization", "Bearer "+aRead)
		return req
	}())
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 || strconv.Itoa(len(body)) != res.Header.Get("Content-Length") {
		t.Fatalf("export after the stalls (%s): %d, %d bytes (Content-Length %s), %v", time.Since(began), res.StatusCode, len(body), res.Header.Get("Content-Length"), err)
	}
	if n := strings.Count(string(body), ",CH1/26-27/"); n < 800 {
		t.Fatalf("export after the stalls holds %d rows, want 800", n)
	}
}
