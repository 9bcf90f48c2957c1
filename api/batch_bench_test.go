package api

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/benchcpu"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
)

// BenchmarkDecodeBatch measures decoding a batch of 500 POS invoices (the
// bench's --batch 500 body): the envelope and every item.
func BenchmarkDecodeBatch(b *testing.B) {
	var body bytes.Buffer
	body.WriteString(`{"invoices":[`)
	for i := range maxBatchInvoices {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"idempotency_key":"bench-%d","invoice_date":null,"place_of_supply":"24",`+
			`"items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"},`+
			`{"description":"Samosa","hsn":"2106","quantity":"1","unit_price":"15.00","gst_rate":"5"}]}`, i)
	}
	body.WriteString(`]}`)
	b.SetBytes(int64(body.Len()))
	b.ReportAllocs()
	defer benchcpu.Start(b, "inv", maxBatchInvoices)()
	for b.Loop() {
		items, err := decodeBatchEnvelope(body.Bytes())
		if err != nil {
			b.Fatal(err)
		}
		for _, it := range items {
			if _, err := decodeBatchItem(it); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkBatchRoute sends batches of 500 POS invoices (fresh keys)
// through the whole route, HTTP included, to a server on a real database
// (TEST_DATABASE_URL), from 8 clients at once so that the Committer
// merges them as under load. It reports the Go process's CPU per invoice
// (cpu-µs/inv: server and the small client, not PostgreSQL), the wall
// time per invoice (ns/inv, which moves with the host's load) and allocs
// per batch; run it with -cpuprofile to see where the server's time goes:
//
//	scripts/pg test -- go test -run '^$' -bench BatchRoute -benchtime 40x -cpuprofile cpu.out ./api/
func BenchmarkBatchRoute(b *testing.B) {
	pool := dbtest.New(b)
	seller := testfactory.Seller(b, pool, &testfactory.SellerOpts{GSTIN: sellerGSTIN})
	key, err := apikey.Create(b.Context(), pool, seller.ID, []string{apikey.ScopeIssue})
	if err != nil {
		b.Fatal(err)
	}
	testfactory.Series(b, pool, seller, &testfactory.SeriesOpts{Code: "CH1", Format: "C/{FY}/{SEQ:8}"})
	ts := httptest.NewServer(New(Config{Pool: pool, Now: func() time.Time { return testNow }}).Handler())
	b.Cleanup(ts.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	b.Cleanup(client.CloseIdleConnections)
	var next atomic.Int64
	body := func() []byte {
		var buf bytes.Buffer
		buf.WriteString(`{"invoices":[`)
		for i := range maxBatchInvoices {
			if i > 0 {
				buf.WriteByte(',')
			}
			fmt.Fprintf(&buf, `{"idempotency_key":"bench-%d","place_of_supply":"27",`+
				`"items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"},`+
				`{"description":"Samosa","hsn":"2106","quantity":"1","unit_price":"15.00","gst_rate":"5"}]}`, next.Add(1))
		}
		buf.WriteString(`]}`)
		return buf.Bytes()
	}
	post := func(body []byte) {
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/v1/series/CH1/invoices/batch", bytes.NewReader(body))
		if err != nil {
			b.Error(err)
			return
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			b.Error(err)
			return
		}
		out, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK || bytes.Contains(out, []byte(`"error"`)) {
			b.Errorf("status %d: %.300s (%v)", res.StatusCode, out, err)
		}
	}
	post(body()) // warm the caches (key, series, counter row)
	bodies := make(chan []byte, b.N)
	for range b.N {
		bodies <- body()
	}
	b.SetParallelism(8 / max(1, runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	stop := benchcpu.Start(b, "inv", maxBatchInvoices)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			post(<-bodies)
		}
	})
	stop()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*maxBatchInvoices), "ns/inv")
}
