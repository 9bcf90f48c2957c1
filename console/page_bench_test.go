package console_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/console"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
)

// BenchmarkSeriesYearPage measures a console series-year page (the first
// page, a page in the middle, and a number found) of one series-year of
// $CONSOLE_BENCH_INVOICES invoices (20,000 unless set; docs/console.md
// gives the figure at 1,000,000). The rows are inserted with one SQL
// statement, so the setup takes seconds, not the hours issuing would.
func BenchmarkSeriesYearPage(b *testing.B) {
	n := 20_000
	if v := os.Getenv("CONSOLE_BENCH_INVOICES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1000 {
			b.Fatalf("CONSOLE_BENCH_INVOICES=%q: a count of at least 1000", v)
		}
	}
	ctx := b.Context()
	pool := dbtest.New(b)
	seller := testfactory.Seller(b, pool, nil)
	sr := testfactory.Series(b, pool, seller, &testfactory.SeriesOpts{Code: "BIG", Format: "B/{FY}/{SEQ:7}"})
	began := time.Now()
	if _, err := pool.Exec(ctx, `
		INSERT INTO series_counters (series_id, seller_id, fy, last_serial, capacity, last_invoice_date, last_issued_at, chain_length, chain_head)
		VALUES ($1, $2, 2026, $3, 9999999, '2027-03-31', now(), 0, NULL)`, sr.ID, seller.ID, n); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO invoices (seller_id, series_id, fy, serial, number, invoice_date, issued_at, public_id, buyer_name,
			place_of_supply, items, taxable, cgst, sgst, igst, total)
		SELECT $1, $2, 2026, s, 'B/26-27/' || lpad(s::text, 7, '0'), date '2026-04-01' + (s * 364 / $3)::int,
			timestamptz '2026-04-01 04:30Z' + s * interval '30 s', 'bench' || s, 'Buyer ' || s,
			'27', '[]', 100, 2.5, 2.5, 0, 105
		FROM generate_series(1, $3) s`, seller.ID, sr.ID, n); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE invoices`); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d invoices inserted in %v", n, time.Since(began).Round(time.Millisecond))
	key, err := apikey.Create(ctx, pool, seller.ID, []string{apikey.ScopeRead})
	if err != nil {
		b.Fatal(err)
	}
	apiSrv := api.New(api.Config{Pool: pool})
	mux := http.NewServeMux()
	mux.Handle("/console/", console.New(console.Config{Pool: pool, Keys: apiSrv}))
	ts := httptest.NewServer(mux)
	b.Cleanup(ts.Close)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	fetch := func(u string) []byte {
		res, err := c.Get(ts.URL + u)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			b.Fatalf("%s: %d %.300s", u, res.StatusCode, body)
		}
		return body
	}
	token := loginTokenRE.FindSubmatch(fetch("/console/login"))
	if token == nil {
		b.Fatal("no login token")
	}
	if _, err := c.PostForm(ts.URL+"/console/login", url.Values{"key": {key}, "login_token": {string(token[1])}}); err != nil {
		b.Fatal(err)
	}
	for _, page := range []struct{ name, path string }{
		{"first", "/console/series/BIG/2026-27"},
		{"middle", "/console/series/BIG/2026-27?after=" + strconv.Itoa(n/2)},
		{"number", "/console/series/BIG/2026-27?number=" + fmt.Sprintf("B/26-27/%07d", n-7)},
	} {
		if !bytes.Contains(fetch(page.path), []byte(`<tr class="issued"`)) {
			b.Fatalf("%s shows no row", page.path)
		}
		b.Run(page.name, func(b *testing.B) {
			for b.Loop() {
				fetch(page.path)
			}
		})
	}
}
