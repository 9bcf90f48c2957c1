package readplans_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/servetest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The request costs docs/bench.md quotes ("What a request costs"),
// measured on the real binary (`invoiced serve` with its defaults) on a
// fresh database:
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 30m ./internal/readplans/
//
// Each benchmark measures once per iteration and reports its figures as
// metrics; READPLANS_FRESH and READPLANS_SKEW size the fresh burst (20,000
// invoices) and the skewed seller (200,000).

var (
	binOnce sync.Once
	bin     *servetest.Binary
	binErr  error
)

// TestMain removes the binary the benchmarks built.
func TestMain(m *testing.M) {
	code := m.Run()
	if bin != nil {
		bin.Close()
	}
	os.Exit(code)
}

// served starts `invoiced serve` on a fresh database and returns it, with
// a pool on its database.
func served(b *testing.B, flags ...string) (*servetest.Server, *pgxpool.Pool) {
	b.Helper()
	binOnce.Do(func() { bin, binErr = servetest.Build() })
	if binErr != nil {
		b.Fatal(binErr)
	}
	u := dbtest.NewURL(b)
	pool, err := pgxpool.New(b.Context(), u)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return bin.Start(b, u, "127.0.0.1:0", append([]string{"--metrics-addr", "off", "--log-requests=false", "--verify-interval", "0"}, flags...)...), pool
}

// rss returns the resident memory of process pid, in bytes.
func rss(b *testing.B, pid int) int64 {
	b.Helper()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// watchRSS samples pid's RSS (peakRSS) until the function it returns is
// called; it returns the RSS before and that function, which returns the
// peak.
func watchRSS(b *testing.B, pid int) (before int64, stop func() (peak int64)) {
	before = rss(b, pid)
	done := make(chan struct{})
	peakc := make(chan int64)
	go func() { peakc <- peakRSS(b, pid, done) }()
	return before, func() int64 {
		close(done)
		return <-peakc
	}
}

// peakRSS samples pid's RSS every 5 ms until stop is closed and returns
// the largest sample.
func peakRSS(b *testing.B, pid int, stop <-chan struct{}) int64 {
	var peak int64
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		peak = max(peak, rss(b, pid))
		select {
		case <-stop:
			return peak
		case <-t.C:
		}
	}
}

// keyed is a seller of the server with a key of every scope and series C1.
type keyed struct {
	seller gst.Seller
	key    string
}

func newKeyed(b *testing.B, pool *pgxpool.Pool, gstin string) keyed {
	b.Helper()
	s := testfactory.Seller(b, pool, &testfactory.SellerOpts{GSTIN: gstin, Name: "Seller " + gstin})
	testfactory.Series(b, pool, s, &testfactory.SeriesOpts{Code: "C1", Format: "C1/{FY}/{SEQ:7}"})
	key, err := apikey.Create(b.Context(), pool, s.ID, []string{apikey.ScopeIssue, apikey.ScopeRead, apikey.ScopeManage})
	if err != nil {
		b.Fatal(err)
	}
	return keyed{s, key}
}

// send sends a request with k's key and returns its status, body and time.
func send(b *testing.B, c *http.Client, base string, k keyed, method, path, body string) (int, []byte, time.Duration) {
	b.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+k.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	began := time.Now()
	res, err := c.Do(req)
	if err != nil {
		b.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, out, time.Since(began)
}

// issueOne is an issue request of today.
const issueOne = `{"items":[{"description":"Filter coffee","hsn":"0901","quantity":"1","unit_price":"80.00","gst_rate":"5"}]}`

// BenchmarkClaimedBodies: 200 connections of one seller's issue key each
// claim an 8 MiB batch body and send one byte of it, and hold; meanwhile
// another seller issues 20 invoices one after the other. Reported: the
// server's RSS growth (its peak over the baseline) and the other seller's
// slowest issue.
func BenchmarkClaimedBodies(b *testing.B) {
	srv, pool := served(b)
	attacker, other := newKeyed(b, pool, testfactory.SellerGSTIN), newKeyed(b, pool, "29AABCR1718E1ZL")
	base := "http://" + srv.Addr
	c := &http.Client{Timeout: 30 * time.Second}
	for range 5 { // warm the pool and the caches
		send(b, c, base, other, "POST", "/v1/series/C1/invoices", issueOne)
	}
	pid := srv.Cmd.Process.Pid
	for b.Loop() {
		before, stopWatch := watchRSS(b, pid)
		var conns []net.Conn
		for range 200 {
			conn, err := net.Dial("tcp", srv.Addr)
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, conn)
			fmt.Fprintf(conn, "POST /v1/series/C1/invoices/batch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 8388608\r\n\r\n{", attacker.key)
		}
		time.Sleep(time.Second)
		var slowest time.Duration
		for range 20 {
			status, body, took := send(b, c, base, other, "POST", "/v1/series/C1/invoices", issueOne)
			if status != http.StatusCreated {
				b.Fatalf("another seller's issue: %d %s", status, body)
			}
			slowest = max(slowest, took)
		}
		peak := stopWatch()
		for _, conn := range conns {
			conn.Close()
		}
		b.ReportMetric(float64(peak-before)/(1<<20), "MiB-grown")
		b.ReportMetric(float64(slowest.Microseconds())/1000, "ms-other-issue-max")
	}
}

// seedLargeInvoices writes n invoices of 250 lines each (about 65 KB of
// JSON an answer) in k's series C1, dated today, with SQL.
func seedLargeInvoices(b *testing.B, pool *pgxpool.Pool, k keyed, n int) {
	b.Helper()
	line := `{"hsn": "0902", "cgst": "0.25", "igst": "0", "sgst": "0.25", "total": "10.50", "taxable": "10", "gst_rate": "5", "quantity": "1", "unit_price": "10", "description": "Darjeeling first flush, 250 g tin, lot 2026-11"}`
	items := "[" + strings.Repeat(line+",", 249) + line + "]"
	ctx := b.Context()
	for _, q := range []string{`
		INSERT INTO series_counters (seller_id, series_id, fy, last_serial, capacity, last_invoice_date, last_issued_at, chain_length, chain_head)
		SELECT $1, id, 2026, $2::int, 9999999, current_date, now(), 0, NULL FROM series WHERE seller_id = $1 AND code = 'C1' AND $3::text <> ''`, `
		INSERT INTO invoices (seller_id, series_id, fy, serial, number, invoice_date, issued_at, public_id, buyer_name,
			place_of_supply, items, taxable, cgst, sgst, igst, total)
		SELECT $1, sr.id, 2026, s, 'C1/26-27/' || lpad(s::text, 7, '0'), current_date, now(), 'large-' || s, 'Buyer ' || s,
			'27', $3::jsonb, 2500, 62.5, 62.5, 0, 2625
		FROM series sr, generate_series(1, $2::int) s WHERE sr.seller_id = $1 AND sr.code = 'C1'`,
	} {
		if _, err := pool.Exec(ctx, q, k.seller.ID, n, items); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSlowListReaders: 24 clients ask at once for a list of 1,000
// invoices of 250 lines each and read the answer slowly (1 KiB every
// 50 ms); reported: the server's RSS growth while they read, and the
// bytes of the first page.
func BenchmarkSlowListReaders(b *testing.B) {
	srv, pool := served(b)
	k := newKeyed(b, pool, testfactory.SellerGSTIN)
	seedLargeInvoices(b, pool, k, 1000)
	base := "http://" + srv.Addr
	c := &http.Client{Timeout: 5 * time.Minute}
	_, page, _ := send(b, c, base, k, "GET", "/v1/series/C1/invoices?limit=1000", "")
	pid := srv.Cmd.Process.Pid
	for b.Loop() {
		before, stopWatch := watchRSS(b, pid)
		var wg sync.WaitGroup
		var mu sync.Mutex
		statuses := map[string]int{}
		var firstByte time.Duration // the slowest answer's first line
		for range 24 {
			wg.Go(func() {
				conn, err := net.Dial("tcp", srv.Addr)
				if err != nil {
					b.Error(err)
					return
				}
				defer conn.Close()
				_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				began := time.Now()
				fmt.Fprintf(conn, "GET /v1/series/C1/invoices?limit=1000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", k.key)
				r := bufio.NewReaderSize(conn, 1<<10)
				status, err := r.ReadString('\n')
				mu.Lock()
				statuses[strings.TrimSpace(status)]++
				firstByte = max(firstByte, time.Since(began))
				mu.Unlock()
				buf := make([]byte, 1<<10)
				for deadline := time.Now().Add(8 * time.Second); err == nil && time.Now().Before(deadline); {
					_, err = r.Read(buf)
					time.Sleep(50 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		peak := stopWatch()
		b.Logf("answers: %v", statuses)
		b.ReportMetric(float64(peak-before)/(1<<20), "MiB-grown")
		b.ReportMetric(float64(len(page))/(1<<20), "MiB-page")
		b.ReportMetric(ms(firstByte), "ms-slowest-first-line")
	}
}

// consoleClient signs k in to the console of base and returns its client.
func consoleClient(b *testing.B, base string, k keyed) *http.Client {
	b.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(base + "/console/login")
	if err != nil {
		b.Fatal(err)
	}
	form, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := loginTokenRE.FindSubmatch(form)
	if m == nil {
		b.Fatalf("no login token: %.200s", form)
	}
	res, err = c.PostForm(base+"/console/login", url.Values{"key": {k.key}, "login_token": {string(m[1])}})
	if err != nil || res.StatusCode != http.StatusSeeOther {
		b.Fatalf("console sign-in: %v %v", res, err)
	}
	res.Body.Close()
	return c
}

// timed GETs path with c (a console client, or k's key elsewhere) and
// returns how long the whole answer took; the benchmark fails on any
// answer but 200.
func timed(b *testing.B, c *http.Client, base string, k keyed, path string) time.Duration {
	b.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	if !strings.HasPrefix(path, "/console/") {
		req.Header.Set("Authorization", "Bearer "+k.key)
	}
	began := time.Now()
	res, err := c.Do(req)
	if err != nil {
		b.Fatalf("GET %s: %v", path, err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	took := time.Since(began)
	if res.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d %.300s", path, res.StatusCode, body)
	}
	return took
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// size returns the count in environment variable name, def when unset.
func size(b *testing.B, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			b.Fatalf("%s=%q: a count of at least 1000", name, v)
		}
		return n
	}
	return def
}

// BenchmarkFreshBurst: $READPLANS_FRESH invoices (20,000) issued through
// the batch route into a new database whose tables are never analysed
// (autovacuum off), then at once: the console's series-year page, its
// /check, the console's /verify and the API's JSON audit of the year.
func BenchmarkFreshBurst(b *testing.B) {
	n := size(b, "READPLANS_FRESH", 20_000)
	srv, pool := served(b)
	noAutovacuum(b, pool)
	k := newKeyed(b, pool, testfactory.SellerGSTIN)
	base := "http://" + srv.Addr
	c := &http.Client{Timeout: 10 * time.Minute}
	began := time.Now()
	for done := 0; done < n; done += 500 {
		var body bytes.Buffer
		body.WriteString(`{"invoices":[`)
		for i := range min(500, n-done) {
			if i > 0 {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"idempotency_key":"k%d","buyer":{"gstin":"29AAGCB7383J1Z4","name":"Bangalore Traders","address":{"line1":"14 Residency Road","city":"Bengaluru","pin":"560025"}},"place_of_supply":"29","items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]}`, done+i)
		}
		body.WriteString(`]}`)
		if status, out, _ := send(b, c, base, k, "POST", "/v1/series/C1/invoices/batch", body.String()); status != http.StatusOK {
			b.Fatalf("batch: %d %.300s", status, out)
		}
	}
	b.Logf("%d invoices issued in %v", n, time.Since(began).Round(time.Millisecond))
	cc := consoleClient(b, base, k)
	fy := gst.FYOf(gst.DateIST(time.Now())).String()
	for b.Loop() {
		b.ReportMetric(ms(timed(b, cc, base, k, "/console/series/C1/"+fy)), "ms-console-page")
		b.ReportMetric(ms(timed(b, cc, base, k, "/console/series/C1/"+fy+"/check")), "ms-console-check")
		b.ReportMetric(ms(timed(b, cc, base, k, "/console/verify")), "ms-console-verify")
		b.ReportMetric(ms(timed(b, c, base, k, "/v1/series/C1/audit?fy="+fy+"&format=json")), "ms-audit-json")
		b.ReportMetric(ms(timed(b, c, base, k, "/v1/series/C1/audit?fy="+fy+"&format=csv")), "ms-audit-csv")
	}
}

// BenchmarkSkewedSeller: one seller with $READPLANS_SKEW invoices
// (200,000) beside 500 sellers of three, analysed; the console's
// series-year page and GET /v1/events of the large seller are called 20
// times each after 20 calls for a small seller (so that prepared
// statements go generic, on a pool of two connections). Reported: the
// slowest and the median of the last 10 calls.
func BenchmarkSkewedSeller(b *testing.B) {
	n := size(b, "READPLANS_SKEW", 200_000)
	// Two connections, so that each statement runs on one of them often
	// enough to go generic (pgx prepares per connection).
	srv, pool := served(b, "--max-conns", "2", "--min-conns", "2")
	big, small := newKeyed(b, pool, "29AABCR1718E1ZL"), newKeyed(b, pool, testfactory.SellerGSTIN)
	for _, k := range []keyed{big, small} {
		var sr gst.Series
		if err := pool.QueryRow(b.Context(), `SELECT id, seller_id, code FROM series WHERE seller_id = $1`, k.seller.ID).Scan(&sr.ID, &sr.SellerID, &sr.Code); err != nil {
			b.Fatal(err)
		}
		count := 3
		if k == big {
			count = n
		}
		seedSeries(b, pool, k.seller, sr, "C1/26-27/", count)
	}
	seedSmallSellers(b, pool, 500, 3)
	if _, err := pool.Exec(b.Context(), `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	base := "http://" + srv.Addr
	c := &http.Client{Timeout: time.Minute}
	bigConsole, smallConsole := consoleClient(b, base, big), consoleClient(b, base, small)
	for b.Loop() {
		for _, route := range []struct {
			metric, path string
			console      bool
		}{
			{"ms-console-page", "/console/series/C1/2026-27", true},
			{"ms-events", "/v1/events?limit=100", false},
		} {
			var took []time.Duration
			for range 20 {
				sc, bc := c, c
				if route.console {
					sc, bc = smallConsole, bigConsole
				}
				timed(b, sc, base, small, route.path)
				took = append(took, timed(b, bc, base, big, route.path))
			}
			slices.Sort(took[10:])
			b.ReportMetric(ms(took[len(took)-1]), route.metric+"-max")
			b.ReportMetric(ms(took[15]), route.metric+"-median")
		}
	}
}
