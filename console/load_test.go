package console_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/testfactory"
)

// TestOtherSellerIssuesUnderConsoleLoad is the load check of the guard
// chain: while 40 console downloads and 40 API exports of one seller are
// left unread, 24 console verifies run and 3,000 requests with made-up
// methods arrive, another seller issues with a p99 under 1 s. Before, the
// console's downloads streamed inside their transactions: 40 unread ones
// held the pool and another seller's issue got 503 after 10 s.
func TestOtherSellerIssuesUnderConsoleLoad(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *api.Config) { c.ExportStallTimeout = 5 * time.Second })
	ctx := t.Context()
	// Enough rows that a JSON export (about 20 MB) cannot hide in socket
	// buffers: an unread download really stalls.
	if _, err := f.pool.Exec(ctx, `
		INSERT INTO invoices (seller_id, series_id, fy, serial, number, invoice_date, issued_at, public_id, buyer_name,
			place_of_supply, items, taxable, cgst, sgst, igst, total)
		SELECT $1, $2, 2026, s, 'CH1/26-27/' || lpad(s::text, 5, '0'), date '2026-11-28', timestamptz '2026-11-28 04:30Z',
			'load' || s, 'A buyer with a name long enough to fill the rows ' || s, '27', '[]', 100, 2.5, 2.5, 0, 105
		FROM generate_series(6, 30005) s`, f.seller.ID, f.ch1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `UPDATE series_counters SET last_serial = 30005 WHERE series_id = $1`, f.ch1.ID); err != nil {
		t.Fatal(err)
	}
	other := testfactory.Seller(t, f.pool, &testfactory.SellerOpts{GSTIN: "29AABCR1718E1ZL", Name: "Bengaluru Beans"})
	testfactory.Series(t, f.pool, other, &testfactory.SeriesOpts{Code: "B1", Format: "B1/{FY}/{SEQ:5}"})
	issuer, err := apikey.Create(ctx, f.pool, other.ID, []string{apikey.ScopeIssue})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t)
	startSession(t, f, c, f.read)
	var cookie string
	u, _ := url.Parse(f.url + "/console/")
	for _, ck := range c.Jar.Cookies(u) {
		cookie = ck.Name + "=" + ck.Value
	}
	host := strings.TrimPrefix(f.url, "http://")

	// 80 unread downloads: each sends its request and never reads.
	var stalled []net.Conn
	statuses := map[string]int{}
	var mu sync.Mutex
	for i := range 80 {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, conn)
		req := "GET /console/series/CH1/2026-27/audit?format=json HTTP/1.1\r\nHost: " + host + "\r\nCookie: " + cookie + "\r\n\r\n"
		if i%2 == 1 {
			req = "GET /v1/series/CH1/audit?fy=2026-27&format=json HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + f.read + "\r\n\r\n"
		}
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, conn := range stalled {
			conn.Close()
		}
	}()
	// The refused ones answer 429 at once; read their status lines.
	var reads sync.WaitGroup
	for _, conn := range stalled {
		reads.Go(func() {
			_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			line, err := bufio.NewReaderSize(conn, 64).ReadString('\n')
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				statuses["no answer yet"]++
				return
			}
			statuses[strings.TrimSpace(line)]++
		})
	}

	done := make(chan struct{})
	var load sync.WaitGroup
	for range 24 { // verifies
		load.Go(func() {
			vc := client(t)
			vc.Jar = c.Jar
			get(t, vc, f.url+"/console/verify")
		})
	}
	for w := range 8 { // 3,000 made-up methods
		load.Go(func() {
			hc := &http.Client{Timeout: 10 * time.Second}
			for i := range 375 {
				req, _ := http.NewRequest(fmt.Sprintf("X%dQ%d", w, i), f.url+"/v1/series", nil)
				if res, err := hc.Do(req); err == nil {
					res.Body.Close()
				}
			}
		})
	}
	go func() { load.Wait(); close(done) }()

	var took []time.Duration
	hc := &http.Client{Timeout: 30 * time.Second}
	body := `{"invoice_date":"2026-11-29","items":[{"description":"Filter coffee","hsn":"0901","quantity":"1","unit_price":"80.00","gst_rate":"5"}]}`
	for i := 0; i < 100; i++ {
		req, _ := http.NewRequest(http.MethodPost, f.url+"/v1/series/B1/invoices", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+issuer)
		req.Header.Set("Content-Type", "application/json")
		began := time.Now()
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		took = append(took, time.Since(began))
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("issue %d under load: %d", i, res.StatusCode)
		}
	}
	<-done
	reads.Wait()
	slices.Sort(took)
	p99 := took[len(took)*99/100-1]
	t.Logf("another seller's issues under load: p50 %v, p99 %v; unread downloads: %v", took[len(took)/2], p99, statuses)
	if p99 >= time.Second {
		t.Fatalf("p99 %v, want under 1 s", p99)
	}
	if statuses["HTTP/1.1 429 Too Many Requests"] < 70 {
		t.Fatalf("unread downloads answered %v; want all but the export slots' 4 refused with 429", statuses)
	}
}
