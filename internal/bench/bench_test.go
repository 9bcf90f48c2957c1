package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/gst"
)

// readTestdata returns testdata/name.
func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPercentileNearestRank(t *testing.T) {
	t.Parallel()
	var s []time.Duration
	for i := 1000; i >= 1; i-- { // 1..1000 ms, unsorted
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	l := summarize(s)
	want := Latency{Count: 1000, Mean: 500.5, P50: 500, P99: 990, P999: 999, Max: 1000}
	if l != want {
		t.Fatalf("summarize = %+v, want %+v", l, want)
	}
	if got := percentile([]time.Duration{7}, 0.999); got != 7 {
		t.Fatalf("percentile of one sample = %v, want 7ns", got)
	}
	if got := summarize(nil); got != (Latency{}) {
		t.Fatalf("summarize(nil) = %+v, want zero", got)
	}
}

func TestHistogramQuantileWithinBucketPrecision(t *testing.T) {
	t.Parallel()
	var h histogram
	before := h.snapshot()
	rng := rand.New(rand.NewPCG(1, 2))
	var exact []time.Duration
	for range 100000 {
		d := time.Duration(rng.ExpFloat64()*2e6) + 100*time.Microsecond
		h.record(d)
		exact = append(exact, d)
	}
	got, n := snapshotQuantile(h.snapshot(), before, 0.99)
	want := summarize(exact).P99
	if n != 100000 {
		t.Fatalf("count = %d", n)
	}
	if r := ms(got) / want; r < 0.95 || r > 1.01 {
		t.Fatalf("histogram p99 = %v, exact %vms (ratio %.3f)", got, want, r)
	}
	for _, d := range []time.Duration{0, 31 * time.Microsecond, 32 * time.Microsecond, time.Millisecond, time.Hour} {
		if lo := bucketValue(bucketOf(d)); lo > d || float64(d-lo) > 0.04*float64(d)+float64(time.Microsecond) {
			t.Fatalf("bucket of %v starts at %v", d, lo)
		}
	}
}

func TestParsePgbench15(t *testing.T) {
	t.Parallel()
	r, err := parsePgbench(readTestdata(t, "pgbench15_interactive.out"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Processed != 2202 || r.Failed != 0 || r.TPS != 1317.203079 || r.LatencyAvg != 6073*time.Microsecond || r.AbortedClients != 0 || r.RunAborted {
		t.Fatalf("parsed %+v", r)
	}

	r, err = parsePgbench(readTestdata(t, "pgbench15_nowait.out"), readTestdata(t, "pgbench15_nowait.err"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Processed != 1634 || r.AbortedClients != 7 || !r.RunAborted || !strings.Contains(r.AbortReason, "could not obtain lock on row") {
		t.Fatalf("parsed %+v", r)
	}

	if _, err := parsePgbench([]byte("pgbench (15)\n"), []byte("connection refused")); err == nil {
		t.Fatal("no tps line: want an error")
	}
}

func TestParseTxLog(t *testing.T) {
	t.Parallel()
	in := string(readTestdata(t, "pgbench15_txlog")) + "1 9 failed 0 1795994147 999\n"
	lat, err := parseTxLog(strings.NewReader(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lat) != 5 || lat[0] != 29888*time.Microsecond {
		t.Fatalf("latencies %v", lat)
	}
}

func TestSerialOfAndCheckAcked(t *testing.T) {
	t.Parallel()
	if n, ok := serialOf([]byte(`{"id":"x","number":"B1-7","serial": 42,"fy":"2026-27"}`)); !ok || n != 42 {
		t.Fatalf("serialOf = %d, %v", n, ok)
	}
	if _, ok := serialOf([]byte(`{"error":{}}`)); ok {
		t.Fatal("serialOf on an error body succeeded")
	}
	if p := checkAcked(map[string][]int64{"A": {3, 1, 2}, "B": {1}}); p != "" {
		t.Fatalf("contiguous serials reported: %s", p)
	}
	for _, bad := range [][]int64{{1, 3}, {1, 1}, {2}} {
		if p := checkAcked(map[string][]int64{"A": bad}); p == "" {
			t.Fatalf("serials %v passed the check", bad)
		}
	}
}

func TestSVGIsWellFormedXML(t *testing.T) {
	t.Parallel()
	rep := Report{Duration: "10s", DBLatency: "5ms"}
	for _, c := range []int{1, 4, 16, 64} {
		for _, s := range []int{1, 64} {
			rep.Results = append(rep.Results,
				Result{Design: "invoiced batching=true", Kind: "invoiced", Label: "invoiced <ours> & co", Series: s, Concurrency: c, PerSecond: float64(100 * c), Latency: Latency{P99: 3}},
				Result{Design: "pgbench interactive", Kind: "pgbench", Label: "(a) interactive", Series: s, Concurrency: c, PerSecond: 70, Latency: Latency{P99: float64(c)}},
				Result{Design: "pgbench nowait", Kind: "pgbench", Label: "(c) nowait", Series: s, Concurrency: c})
		}
	}
	var buf bytes.Buffer
	if err := writeSVG(&buf, rep); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(&buf)
	var polylines int
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	// 2 phases × 2 metrics × 2 designs with values (nowait has none).
	if polylines != 8 {
		t.Fatalf("%d polylines, want 8", polylines)
	}
	var table bytes.Buffer
	writeTable(&table, rep)
	if !strings.Contains(table.String(), "ours / it") || !strings.Contains(table.String(), "91.4×") {
		t.Fatalf("table lacks the ratio column:\n%s", table.String())
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	c, err := ParseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Spawn != "bin/invoiced" || c.Duration != 10*time.Second || len(c.Concurrency) != 1 || c.Concurrency[0] != 64 ||
		len(c.Phases) != 2 || len(c.Baselines) != len(baselines) {
		t.Fatalf("defaults %+v", c)
	}
	c, err = ParseFlags([]string{"--concurrency", "1,4,16,64", "--db-latency", "5ms", "--baselines", "onestatement,nextval", "--serve-flags", "--max-conns 64"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Concurrency) != 4 || c.DBLatency != 5*time.Millisecond || len(c.Baselines) != 2 || len(c.ServeFlags) != 2 {
		t.Fatalf("parsed %+v", c)
	}
	for _, bad := range [][]string{{"--url", "http://x"}, {"--concurrency", "0"}, {"--baselines", "nope"}, {"extra"}} {
		if _, err := ParseFlags(bad); err == nil {
			t.Fatalf("ParseFlags(%q) succeeded", bad)
		}
	}
}

func TestScriptsEmbedded(t *testing.T) {
	t.Parallel()
	for _, b := range baselines {
		s, err := scripts.ReadFile("pgbench/" + b.script)
		if err != nil || !bytes.Contains(s, []byte(":nseries")) {
			t.Fatalf("%s: %v", b.script, err)
		}
	}
}

func TestMedianRun(t *testing.T) {
	t.Parallel()
	rs := []Result{{PerSecond: 300, OK: 3}, {PerSecond: 100, OK: 1}, {PerSecond: 200, OK: 2}}
	m := median(rs)
	if m.OK != 2 || len(m.Runs) != 3 || m.Runs[0] != 300 || m.Runs[1] != 100 {
		t.Fatalf("median %+v", m)
	}
	if m := median(rs[:2]); m.OK != 1 {
		t.Fatalf("even count: want the lower middle run, got %+v", m)
	}
	if m := median(rs[:1]); m.Runs != nil {
		t.Fatalf("one run keeps no Runs: %+v", m)
	}
}

// The load generator's batch body is a valid batch with distinct keys, and
// its reading of a batch answer finds each result's status and serial,
// whatever an error message says.
func TestBatchBodyAndResults(t *testing.T) {
	t.Parallel()
	var seq atomic.Int64
	var b struct {
		Invoices []map[string]any `json:"invoices"`
	}
	if err := json.Unmarshal(batchBody("t", &seq, 3), &b); err != nil || len(b.Invoices) != 3 {
		t.Fatalf("batch body: %v, %d invoices", err, len(b.Invoices))
	}
	keys := map[any]bool{}
	for _, it := range b.Invoices {
		keys[it["idempotency_key"]] = true
		if it["items"] == nil {
			t.Fatalf("item without items: %v", it)
		}
	}
	if len(keys) != 3 {
		t.Fatalf("keys not distinct: %v", keys)
	}
	answer := `{"results":[{"status":201,"invoice":{"id":"B-2026-7","serial":7,"items":[]}},` +
		`{"status":422,"error":{"code":"invalid_invoice","message":"no \"serial\":9 here {\"status\":201"}},` +
		`{"status":201,"replayed":true,"invoice":{"serial":8}}]}`
	got := batchResults([]byte(answer))
	want := []batchItemResult{{201, 7}, {422, 0}, {201, 8}}
	if len(got) != len(want) {
		t.Fatalf("batchResults = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("batchResults = %v, want %v", got, want)
		}
	}
}

// --sellers N gives N distinct sellers whose GSTINs pass the service's own
// validation (shape, state, check character), in the state of --gstin, the
// same ones on every run; --series then defaults to one series each.
func TestSellersFlag(t *testing.T) {
	t.Parallel()
	c, err := ParseFlags([]string{"--sellers", "64", "--gstin", "27AAPFU0939F1ZV"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sellers != 64 || len(c.Phases) != 1 || c.Phases[0] != 1 {
		t.Fatalf("parsed %+v: want 64 sellers, one phase of 1 series each", c)
	}
	gs, err := c.SellerGSTINs()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, g := range gs {
		parsed, err := gst.ParseGSTIN(g)
		if err != nil {
			t.Fatalf("generated GSTIN %s: %v", g, err)
		}
		if parsed.StateCode() != "27" || seen[g] {
			t.Fatalf("generated GSTIN %s: state %s, repeated %v", g, parsed.StateCode(), seen[g])
		}
		seen[g] = true
	}
	if len(seen) != 64 {
		t.Fatalf("%d distinct GSTINs, want 64", len(seen))
	}
	again, _ := c.SellerGSTINs()
	if !slices.Equal(gs, again) {
		t.Fatal("the sellers differ between runs")
	}
	if one, _ := (Config{GSTIN: "24AAQCA8719H1ZC"}).SellerGSTINs(); len(one) != 1 || one[0] != "24AAQCA8719H1ZC" {
		t.Fatalf("one seller: %v", one)
	}
	if c, err := ParseFlags([]string{"--sellers", "4", "--series", "3,5"}); err != nil || len(c.Phases) != 2 || c.Phases[1] != 5 {
		t.Fatalf("explicit --series with --sellers: %+v, %v", c, err)
	}
	for _, bad := range [][]string{
		{"--sellers", "64", "--series", "16"},                 // 1,024 series in all
		{"--sellers", "2", "--url", "http://x", "--key", "k"}, // a key is one seller's
		{"--sellers", "2", "--webhook"},
		{"--sellers", "1000"},
	} {
		if _, err := ParseFlags(bad); err == nil {
			t.Fatalf("ParseFlags(%q) succeeded", bad)
		}
	}
}

func TestCitusScriptsEmbedded(t *testing.T) {
	t.Parallel()
	for _, b := range baselines {
		if !b.onCitus {
			continue
		}
		s, err := scripts.ReadFile("pgbench/citus/" + b.script)
		if err != nil || !bytes.Contains(s, []byte(":nsellers")) || !bytes.Contains(s, []byte("seller = :seller")) {
			t.Fatalf("citus/%s: %v: want a script naming the seller of each series", b.script, err)
		}
	}
}

// TestCreateSeriesTakenIsErrSeriesTaken: a series code the seller already
// has (an earlier run's, on the same database) is errSeriesTaken, which
// makes measureInvoiced pick another run tag; any other refusal is not.
func TestCreateSeriesTakenIsErrSeriesTaken(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Code string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		switch body.Code {
		case "BTAKEN-1":
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"error":{"code":"duplicate_series","message":"series BTAKEN-1 already exists"}}`)
		case "BBAD-1":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"code":"invalid_series","message":"no"}}`)
		default:
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{}`)
		}
	}))
	defer srv.Close()
	a := newAPIClient(srv.URL, "key", 1)
	defer a.close()
	ctx := t.Context()
	if err := a.createSeries(ctx, "BTAKEN-1"); !errors.Is(err, errSeriesTaken) {
		t.Fatalf("taken code: %v, want errSeriesTaken", err)
	}
	if err := a.createSeries(ctx, "BBAD-1"); err == nil || errors.Is(err, errSeriesTaken) {
		t.Fatalf("refused code: %v, want an error that is not errSeriesTaken", err)
	}
	if err := a.createSeries(ctx, "BFREE-1"); err != nil {
		t.Fatalf("free code: %v", err)
	}
}
