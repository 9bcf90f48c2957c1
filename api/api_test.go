package api

import (
	"encoding/json"
	"fmt"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/sellers"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/series"
)

// issueMany issues n invoices on each of codes with clients concurrent
// clients and returns the serials seen per code.
func issueMany(t *testing.T, e *env, codes []string, n, clients int) map[string][]invoiceOut {
	t.Helper()
	type job struct{ code string }
	jobs := make(chan job)
	var mu sync.Mutex
	got := map[string][]invoiceOut{}
	var failed []string
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				r, err := e.try("POST", "/v1/series/"+j.code+"/invoices", e.issue, issueJSON(""))
				mu.Lock()
				if err != nil || r.status != http.StatusCreated {
					failed = append(failed, fmt.Sprintf("%s: %d %s %v", j.code, r.status, r.body, err))
				} else {
					var out invoiceOut
					if err := json.Unmarshal(r.body, &out); err != nil {
						failed = append(failed, err.Error())
					}
					got[j.code] = append(got[j.code], out)
				}
				mu.Unlock()
			}
		}()
	}
	for range n {
		for _, c := range codes {
			jobs <- job{c}
		}
	}
	close(jobs)
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d requests failed, first: %s", len(failed), failed[0])
	}
	return got
}

// checkContiguous checks that invs hold serials exactly 1..n, each numbered
// with prefix and five digits.
func checkContiguous(t *testing.T, invs []invoiceOut, n int, prefix string) {
	t.Helper()
	if len(invs) != n {
		t.Fatalf("%d invoices, want %d", len(invs), n)
	}
	seen := make([]bool, n+1)
	for _, inv := range invs {
		if inv.Serial < 1 || inv.Serial > int64(n) || seen[inv.Serial] {
			t.Fatalf("serial %d out of range or repeated", inv.Serial)
		}
		seen[inv.Serial] = true
		if want := fmt.Sprintf("%s%05d", prefix, inv.Serial); inv.Number != want {
			t.Fatalf("serial %d numbered %q, want %q", inv.Serial, inv.Number, want)
		}
	}
}

func TestIssueConcurrentOneSeries(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const n = 2000
	got := issueMany(t, e, []string{"CH1"}, n, 64)
	checkContiguous(t, got["CH1"], n, "CH1/26-27/")
	var count, maxSerial int64
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*), max(serial) FROM invoices`).Scan(&count, &maxSerial); err != nil {
		t.Fatal(err)
	}
	if count != n || maxSerial != n {
		t.Fatalf("database holds %d invoices, max serial %d; want %d", count, maxSerial, n)
	}
	r := e.do("GET", "/v1/series", e.read, "")
	e.wantStatus(r, http.StatusOK)
	want := `"years":[{"fy":"2026-27","last_serial":2000,"last_number":"CH1/26-27/02000","last_invoice_date":"2026-11-29"}]`
	if !strings.Contains(string(r.body), want) {
		t.Fatalf("series list %s lacks %s", r.body, want)
	}
}

// TestIssueConcurrentPlainCommitter runs the plain strategy (plain
// transactions, not predicted) through the same server, and checks what
// /debug/stats says of it: batching (always true), every invoice, none
// predicted.
func TestIssueConcurrentPlainCommitter(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.ExposeStats = true }, plainCommitter(t))
	const n = 300
	got := issueMany(t, e, []string{"CH1"}, n, 32)
	checkContiguous(t, got["CH1"], n, "CH1/26-27/")
	r := e.do("GET", "/debug/stats", "", "")
	e.wantStatus(r, http.StatusOK)
	var st statsBody
	if err := json.Unmarshal(r.body, &st); err != nil {
		t.Fatal(err)
	}
	if !st.Batching || st.Invoices != n || st.Batches < 1 || st.Batches > n || st.Predicted != 0 || st.Mispredicted != 0 {
		t.Fatalf("stats %s, want batching, %d invoices in 1 to %d batches, none predicted", r.body, n, n)
	}
}

func TestStatsHiddenByDefault(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.wantError(e.do("GET", "/debug/stats", "", ""), http.StatusNotFound, "not_found")
}

func TestIssueConcurrentSeveralSeries(t *testing.T) {
	t.Parallel()
	e := setup(t)
	codes := []string{"CH1", "CH2", "CH3", "CH4"}
	for _, c := range codes[1:] {
		e.createSeries(c, "invoice", c+"/{FY}/{SEQ:5}")
	}
	const n = 400
	got := issueMany(t, e, codes, n, 64)
	for _, c := range codes {
		checkContiguous(t, got[c], n, c+"/26-27/")
	}
	// What is stored is what was answered: each series holds exactly its
	// acknowledged numbers, no more, and none under another series.
	answered := map[string]int64{} // number → serial
	for _, c := range codes {
		for _, inv := range got[c] {
			answered[inv.Number] = inv.Serial
		}
	}
	rows, err := e.pool.Query(t.Context(), `SELECT s.code, i.serial, i.number FROM invoices i
		JOIN series s ON s.id = i.series_id AND s.seller_id = i.seller_id WHERE i.seller_id = $1`, e.seller.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for rows.Next() {
		var code, number string
		var serial int64
		if err := rows.Scan(&code, &serial, &number); err != nil {
			t.Fatal(err)
		}
		stored++
		if want, ok := answered[number]; !ok || want != serial || number != fmt.Sprintf("%s/26-27/%05d", code, serial) {
			t.Errorf("stored %s serial %d in series %s: not what was answered (answered serial %d, %v)", number, serial, code, want, ok)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if stored != len(codes)*n {
		t.Fatalf("%d invoices stored, want the %d answered", stored, len(codes)*n)
	}
}

func TestIssueResponse(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.do("POST", "/v1/series/ch1/invoices", e.issue, issueJSON("2026-11-29"))
	e.wantStatus(r, http.StatusCreated)
	inv := e.invoice(r)
	want := fmt.Sprintf(`{"id":"%s","number":"CH1/26-27/00001","serial":1,"fy":"2026-27","series":"CH1","doc_type":"invoice",`+
		`"invoice_date":"2026-11-29","issued_at":"2026-11-29T04:30:00.000000Z","status":"issued","public_id":"%s","receipt_url":"/r/%s",`+
		`"place_of_supply":"27","totals":{"taxable":"20.00","cgst":"0.50","sgst":"0.50","igst":"0.00","total":"21.00"},`+
		`"items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5","taxable":"20.00","cgst":"0.50","sgst":"0.50","igst":"0.00","total":"21.00"}],`+
		`"e_invoice":{"status":"not_applicable"}}`,
		inv.ID, inv.PublicID, inv.PublicID)
	if string(r.body) != want {
		t.Fatalf("body\n%s\nwant\n%s", r.body, want)
	}
	if route, ok := document.ParsePublicID(inv.PublicID); !ok || route.SellerID != e.seller.ID || inv.ID == "" {
		t.Fatalf("ids %q %q", inv.ID, inv.PublicID)
	}
	// Inter-state with a buyer: IGST.
	r = e.do("POST", "/v1/series/CH1/invoices", e.issue, `{"buyer":{"gstin":"`+buyerGSTIN+`","name":"Bangalore Traders",`+buyerAddress+`},"place_of_supply":"29",`+
		`"items":[{"description":"Tea","hsn":"0902","quantity":"1.5","unit_price":"99.995","gst_rate":"18"}]}`)
	e.wantStatus(r, http.StatusCreated)
	for _, s := range []string{`"buyer":{"gstin":"29AAGCB7383J1Z4","name":"Bangalore Traders","address":{"line1":"14 Residency Road","city":"Bengaluru","pin":"560025","state":"29"}}`, `"place_of_supply":"29"`,
		`"quantity":"1.5","unit_price":"99.995","gst_rate":"18","taxable":"149.99","cgst":"0.00","sgst":"0.00","igst":"27.00","total":"176.99"`,
		`"number":"CH1/26-27/00002"`} {
		if !strings.Contains(string(r.body), s) {
			t.Fatalf("body %s lacks %s", r.body, s)
		}
	}
	// GET returns the same body.
	g := e.do("GET", "/v1/invoices/"+inv.ID, e.read, "")
	e.wantStatus(g, http.StatusOK)
	if string(g.body) != want {
		t.Fatalf("GET body\n%s\nwant\n%s", g.body, want)
	}
}

func TestErrorStatuses(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.MaxBodyBytes = 4096 })
	revoked := mustKey(t, e.pool, e.seller.ID, apikey.ScopeIssue)
	if err := apikey.Revoke(t.Context(), e.pool, revoked[3:11]); err != nil {
		t.Fatal(err)
	}
	good := issueJSON("")
	path := "/v1/series/CH1/invoices"
	big := `{"items":[{"description":"` + strings.Repeat("x", 5000) + `","hsn":"0902","quantity":"1","unit_price":"1","gst_rate":"5"}]}`
	cases := []struct {
		name   string
		method string
		path   string
		key    string
		body   string
		extra  []string
		status int
		code   string
	}{
		{"malformed json", "POST", path, e.all, `{"items":[`, nil, 400, "malformed_json"},
		{"not an object", "POST", path, e.all, `[1]`, nil, 400, "malformed_json"},
		{"unknown field", "POST", path, e.all, `{"itemz":[]}`, nil, 400, "unknown_field"},
		{"trailing data", "POST", path, e.all, good + `{}`, nil, 400, "malformed_json"},
		{"too deep", "POST", path, e.all, strings.Repeat("[", 20) + strings.Repeat("]", 20), nil, 400, "malformed_json"},
		{"empty idempotency key", "POST", path, e.all, good, []string{"Idempotency-Key", ""}, 400, "invalid_idempotency_key"},
		{"long idempotency key", "POST", path, e.all, good, []string{"Idempotency-Key", strings.Repeat("k", 256)}, 400, "invalid_idempotency_key"},
		{"no key", "POST", path, "", good, nil, 401, "unauthorized"},
		{"unknown key", "POST", path, "ik_00000000_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", good, nil, 401, "unauthorized"},
		{"garbage key", "GET", "/v1/series", "nope", "", nil, 401, "unauthorized"},
		{"wrong secret", "GET", "/v1/series", wrongSecret(e.read), "", nil, 401, "unauthorized"},
		{"revoked key", "POST", path, revoked, good, nil, 401, "unauthorized"},
		{"missing scope", "POST", path, e.read, good, nil, 403, "forbidden"},
		{"unknown series", "POST", "/v1/series/NOPE/invoices", e.all, good, nil, 404, "series_not_found"},
		{"bad series code", "GET", "/v1/series/a$b/invoices", e.all, "", nil, 404, "series_not_found"},
		{"unknown route", "GET", "/v2/nothing", e.all, "", nil, 404, "not_found"},
		{"unparseable invoice id", "GET", "/v1/invoices/abc", e.all, "", nil, 404, "invoice_not_found"},
		{"unknown invoice id", "GET", "/v1/invoices/999999", e.all, "", nil, 404, "invoice_not_found"},
		{"method not allowed", "DELETE", "/v1/series", e.all, "", nil, 405, "method_not_allowed"},
		{"duplicate series", "POST", "/v1/series", e.all, `{"code":"ch1","doc_type":"invoice","format":"X/{SEQ:4}"}`, nil, 409, "duplicate_series"},
		{"overlapping format", "POST", "/v1/series", e.all, `{"code":"CH9","doc_type":"invoice","format":"CH1/{FY}/{SEQ:5}"}`, nil, 409, "overlapping_format"},
		{"body too large", "POST", path, e.all, big, nil, 413, "body_too_large"},
		{"not json", "POST", path, e.all, good, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
		{"number amount", "POST", path, e.all, `{"items":[{"description":"Chai","hsn":"0902","quantity":2,"unit_price":"10","gst_rate":"5"}]}`, nil, 422, "invalid_invoice"},
		{"bool amount", "POST", path, e.all, `{"items":[{"description":"Chai","hsn":"0902","quantity":true,"unit_price":"10","gst_rate":"5"}]}`, nil, 422, "invalid_invoice"},
		{"wrong type", "POST", path, e.all, `{"items":"chai"}`, nil, 422, "invalid_invoice"},
		{"bad date", "POST", path, e.all, issueJSON("2026-11-9"), nil, 422, "invalid_date"},
		{"bad rate", "POST", path, e.all, `{"items":[{"description":"Chai","hsn":"0902","quantity":"2","unit_price":"10","gst_rate":"4"}]}`, nil, 422, "invalid_invoice"},
		{"no items", "POST", path, e.all, `{"items":[]}`, nil, 422, "invalid_invoice"},
		{"bad buyer gstin", "POST", path, e.all, `{"buyer":{"gstin":"01AABCE2207R1Z5"},"items":[{"description":"Chai","hsn":"0902","quantity":"2","unit_price":"10","gst_rate":"5"}]}`, nil, 422, "invalid_gstin"},
		{"bad format", "POST", "/v1/series", e.all, `{"code":"X1","doc_type":"invoice","format":"nope"}`, nil, 422, "invalid_format"},
		{"bad doc type", "POST", "/v1/series", e.all, `{"code":"X1","doc_type":"bill","format":"X1/{SEQ:4}"}`, nil, 422, "invalid_doc_type"},
		{"bad code", "POST", "/v1/series", e.all, `{"code":"a/b","doc_type":"invoice","format":"X1/{SEQ:4}"}`, nil, 422, "invalid_series"},
		{"bad fy", "GET", "/v1/series/CH1/invoices?fy=2026-28", e.all, "", nil, 422, "invalid_date"},
		{"bad cursor", "GET", "/v1/series/CH1/invoices?cursor=zz", e.all, "", nil, 422, "invalid_cursor"},
		{"bad limit", "GET", "/v1/series/CH1/invoices?limit=1001", e.all, "", nil, 422, "invalid_limit"},
		{"empty reason", "POST", "/v1/invoices/1/cancel", e.all, `{"reason":""}`, nil, 422, "invalid_invoice"},
		{"cancel unknown invoice", "POST", "/v1/invoices/1/cancel", e.all, `{"reason":"x"}`, nil, 404, "invoice_not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := *e
			e.t = t
			r := e.do(tc.method, tc.path, tc.key, tc.body, tc.extra...)
			e.wantError(r, tc.status, tc.code)
			if tc.status == 401 && r.header.Get("WWW-Authenticate") == "" {
				t.Fatalf("401 without WWW-Authenticate")
			}
		})
	}
	// None of the refused requests took a number.
	if inv := e.mustIssue("CH1", ""); inv.Serial != 1 {
		t.Fatalf("after refused requests serial %d, want 1", inv.Serial)
	}
}

func TestLockTimeout503(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.LockTimeout = 200 * time.Millisecond })
	e.createSeries("CH2", "invoice", "CH2/{FY}/{SEQ:5}")
	ctx := t.Context()
	s, err := series.Get(ctx, e.pool, e.seller.ID, "CH1")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := series.Next(ctx, tx, s, gst.DateIST(testNow), testNow, series.Options{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := e.do("POST", "/v1/series/CH1/invoices", e.issue, issueJSON(""))
	e.wantError(r, http.StatusServiceUnavailable, "series_busy")
	if r.header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("503 took %v", d)
	}
	if inv := e.mustIssue("CH2", ""); inv.Number != "CH2/26-27/00001" {
		t.Fatalf("other series gave %q", inv.Number)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if inv := e.mustIssue("CH1", ""); inv.Serial != 1 {
		t.Fatalf("after the lock was released serial %d, want 1", inv.Serial)
	}
}

func TestDatabaseDown503(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// A second server on a pool whose database does not answer.
	cfg := e.cfg
	pool, err := pgxpoolNewLazy("postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	cfg.Pool = pool
	down := *e
	down.t = t
	down.url = startServer(t, cfg)
	for _, p := range []struct{ method, path, body string }{
		{"GET", "/readyz", ""}, {"GET", "/v1/series", ""}, {"POST", "/v1/series/CH1/invoices", issueJSON("")},
	} {
		r := down.do(p.method, p.path, e.all, p.body)
		down.wantError(r, http.StatusServiceUnavailable, "database_unavailable")
	}
	r := down.do("GET", "/healthz", "", "")
	down.wantStatus(r, http.StatusOK)
	r = e.do("GET", "/readyz", "", "")
	e.wantStatus(r, http.StatusOK)
	if string(r.body) != `{"status":"ok"}` {
		t.Fatalf("readyz %s", r.body)
	}
}

func TestValidationConsumesNoNumber(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if inv := e.mustIssue("CH1", ""); inv.Serial != 1 {
		t.Fatalf("serial %d", inv.Serial)
	}
	bad := []string{
		`{"items":[{"description":"Chai","hsn":"09","quantity":"2","unit_price":"10","gst_rate":"5"}]}`,
		`{"items":[{"description":"Chai","hsn":"0902","quantity":"-2","unit_price":"10","gst_rate":"5"}]}`,
		`{"place_of_supply":"99","items":[{"description":"Chai","hsn":"0902","quantity":"2","unit_price":"10","gst_rate":"5"}]}`,
		issueJSON("2026-11-30"),
	}
	for _, b := range bad {
		r := e.do("POST", "/v1/series/CH1/invoices", e.all, b)
		if r.status != http.StatusUnprocessableEntity {
			t.Fatalf("%s: status %d %s", b, r.status, r.body)
		}
	}
	if inv := e.mustIssue("CH1", ""); inv.Serial != 2 || inv.Number != "CH1/26-27/00002" {
		t.Fatalf("after refusals got %d %s, want serial 2", inv.Serial, inv.Number)
	}
}

func TestIdempotentReplay(t *testing.T) {
	t.Parallel()
	e := setup(t)
	path := "/v1/series/CH1/invoices"
	body := issueJSON("2026-11-29")
	first := e.do("POST", path, e.issue, body, "Idempotency-Key", "order-42")
	e.wantStatus(first, http.StatusCreated)
	if first.header.Get(headerReplayed) != "" {
		t.Fatalf("first answer marked replayed")
	}
	// Lower-case series code: the same request.
	again := e.do("POST", "/v1/series/ch1/invoices", e.issue, body, "Idempotency-Key", "order-42")
	e.wantStatus(again, http.StatusCreated)
	if string(again.body) != string(first.body) {
		t.Fatalf("replay body\n%s\nfirst\n%s", again.body, first.body)
	}
	if again.header.Get(headerReplayed) != "true" {
		t.Fatalf("Idempotent-Replayed %q", again.header.Get(headerReplayed))
	}
	// A different body with the same key.
	r := e.do("POST", path, e.issue, issueJSON(""), "Idempotency-Key", "order-42")
	e.wantError(r, http.StatusUnprocessableEntity, "idempotency_key_reused")
	// After cancellation the replay still answers as first issued.
	inv := e.invoice(first)
	e.wantStatus(e.do("POST", "/v1/invoices/"+inv.ID+"/cancel", e.issue, `{"reason":"wrong item"}`), http.StatusOK)
	r = e.do("POST", path, e.issue, body, "Idempotency-Key", "order-42")
	e.wantStatus(r, http.StatusCreated)
	if string(r.body) != string(first.body) {
		t.Fatalf("replay after cancel\n%s\nfirst\n%s", r.body, first.body)
	}
	// Keys are per seller and another key of the seller shares them.
	r = e.do("POST", path, e.all, body, "Idempotency-Key", "order-42")
	if string(r.body) != string(first.body) {
		t.Fatalf("replay with another key of the seller differs: %s", r.body)
	}
	// No second number was taken.
	if next := e.mustIssue("CH1", ""); next.Serial != 2 {
		t.Fatalf("next serial %d, want 2", next.Serial)
	}
}

func TestIdempotentReplayAfterDateTooOld(t *testing.T) {
	t.Parallel()
	clock := testNow
	var mu sync.Mutex
	e := setup(t, func(c *Config) {
		c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	})
	body := issueJSON("2026-11-29")
	first := e.do("POST", "/v1/series/CH1/invoices", e.issue, body, "Idempotency-Key", "k1")
	e.wantStatus(first, http.StatusCreated)
	mu.Lock()
	clock = clock.Add(48 * time.Hour)
	mu.Unlock()
	r := e.do("POST", "/v1/series/CH1/invoices", e.issue, body, "Idempotency-Key", "k1")
	e.wantStatus(r, http.StatusCreated)
	if string(r.body) != string(first.body) || r.header.Get(headerReplayed) != "true" {
		t.Fatalf("retry two days later: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/v1/series/CH1/invoices", e.issue, body, "Idempotency-Key", "k2")
	e.wantError(r, http.StatusUnprocessableEntity, "invalid_date")
}

func TestIdempotentConcurrent(t *testing.T) {
	t.Parallel()
	e := setup(t)
	body := issueJSON("")
	const n = 16
	results := make([]resp, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := e.try("POST", "/v1/series/CH1/invoices", e.issue, body, "Idempotency-Key", "same")
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		}()
	}
	close(start)
	wg.Wait()
	var created []byte
	fresh := 0
	for _, r := range results {
		switch r.status {
		case http.StatusCreated:
			if r.header.Get(headerReplayed) != "true" {
				fresh++
			}
			if created != nil && string(created) != string(r.body) {
				t.Fatalf("two different 201 bodies:\n%s\n%s", created, r.body)
			}
			created = r.body
		case http.StatusConflict:
			if !strings.Contains(string(r.body), `"idempotency_key_in_progress"`) {
				t.Fatalf("409 body %s", r.body)
			}
		default:
			t.Fatalf("status %d %s", r.status, r.body)
		}
	}
	if fresh != 1 {
		t.Fatalf("%d fresh 201 answers, want exactly 1", fresh)
	}
	var count int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM invoices`).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if count != 1 {
		t.Fatalf("%d invoices stored, want 1", count)
	}
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	e := setup(t)
	other := testfactory.Seller(t, e.pool, &testfactory.SellerOpts{GSTIN: otherGSTIN, Name: "Other Traders"})
	otherKey := mustKey(t, e.pool, other.ID, apikey.ScopeIssue, apikey.ScopeRead, apikey.ScopeManage)
	mine := e.mustIssue("CH1", "")
	// The other seller has its own CH1 numbering, and its key sees none of ours.
	r := e.do("GET", "/v1/series/CH1/invoices", otherKey, "")
	e.wantError(r, http.StatusNotFound, "series_not_found")
	r = e.do("POST", "/v1/series/CH1/invoices", otherKey, issueJSON(""))
	e.wantError(r, http.StatusNotFound, "series_not_found")
	r = e.do("GET", "/v1/invoices/"+mine.ID, otherKey, "")
	e.wantError(r, http.StatusNotFound, "invoice_not_found")
	r = e.do("POST", "/v1/invoices/"+mine.ID+"/cancel", otherKey, `{"reason":"x"}`)
	e.wantError(r, http.StatusNotFound, "invoice_not_found")
	r = e.do("GET", "/v1/series", otherKey, "")
	e.wantStatus(r, http.StatusOK)
	if string(r.body) != `{"series":[]}` {
		t.Fatalf("other seller's series list %s", r.body)
	}
	// Creating CH1 for the other seller is fine.
	r = e.do("POST", "/v1/series", otherKey, `{"code":"CH1","doc_type":"invoice","format":"CH1/{FY}/{SEQ:5}"}`)
	e.wantStatus(r, http.StatusCreated)
	r = e.do("POST", "/v1/series/CH1/invoices", otherKey, issueJSON(""))
	e.wantStatus(r, http.StatusCreated)
	if inv := e.invoice(r); inv.Serial != 1 {
		t.Fatalf("other seller's first serial %d", inv.Serial)
	}
	r = e.do("GET", "/v1/invoices/"+mine.ID, e.read, "")
	e.wantStatus(r, http.StatusOK)
}

func TestScopes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.wantError(e.do("POST", "/v1/series/CH1/invoices", e.read, issueJSON("")), 403, "forbidden")
	e.wantError(e.do("POST", "/v1/series", e.read, `{"code":"X1","doc_type":"invoice","format":"X1/{SEQ:4}"}`), 403, "forbidden")
	e.wantError(e.do("POST", "/v1/series", e.issue, `{"code":"X1","doc_type":"invoice","format":"X1/{SEQ:4}"}`), 403, "forbidden")
	inv := e.mustIssue("CH1", "")
	e.wantError(e.do("GET", "/v1/invoices/"+inv.ID, e.issue, ""), 403, "forbidden")
	e.wantError(e.do("GET", "/v1/series", e.issue, ""), 403, "forbidden")
	e.wantError(e.do("POST", "/v1/invoices/"+inv.ID+"/cancel", e.read, `{"reason":"x"}`), 403, "forbidden")
	e.wantStatus(e.do("GET", "/v1/invoices/"+inv.ID, e.read, ""), 200)
	e.wantStatus(e.do("POST", "/v1/series/CH1/invoices", e.issue, issueJSON("")), 201)
}

func TestCancel(t *testing.T) {
	t.Parallel()
	e := setup(t)
	inv := e.mustIssue("CH1", "")
	r := e.do("POST", "/v1/invoices/"+inv.ID+"/cancel", e.all, `{"reason":"customer returned the chai"}`)
	e.wantStatus(r, http.StatusOK)
	c := e.invoice(r)
	if c.Status != "cancelled" || c.CancelReason != "customer returned the chai" || c.CancelledAt != "2026-11-29T04:30:00.000000Z" ||
		c.Number != inv.Number || c.Serial != 1 {
		t.Fatalf("cancelled invoice %+v", c)
	}
	r = e.do("POST", "/v1/invoices/"+inv.ID+"/cancel", e.issue, `{"reason":"again"}`)
	e.wantError(r, http.StatusConflict, "already_cancelled")
	r = e.do("GET", "/v1/invoices/"+inv.ID, e.read, "")
	if g := e.invoice(r); g.Status != "cancelled" {
		t.Fatalf("GET after cancel: %s", r.body)
	}
	e.wantError(e.do("POST", "/v1/invoices/"+inv.ID+"/cancel", e.issue, `{"reason":""}`), 422, "invalid_invoice")
	e.wantError(e.do("POST", "/v1/invoices/"+inv.ID+"/cancel", e.issue, `{"why":"x"}`), 400, "unknown_field")
	if next := e.mustIssue("CH1", ""); next.Serial != 2 {
		t.Fatalf("after cancel next serial %d, want 2", next.Serial)
	}
}

// TestCancelWithoutReadScope checks that a key that may cancel but not
// read learns from cancelling only what it needs to confirm the
// cancellation: the id, number, status and time, not the buyer, items,
// amounts or receipt link.
func TestCancelWithoutReadScope(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.do("POST", "/v1/series/CH1/invoices", e.all, `{"buyer":{"gstin":"`+buyerGSTIN+`","name":"Bangalore Traders",`+buyerAddress+`},"place_of_supply":"29",`+
		`"items":[{"description":"Tea","hsn":"0902","quantity":"1","unit_price":"99.00","gst_rate":"18"}]}`)
	e.wantStatus(r, http.StatusCreated)
	inv := e.invoice(r)
	r = e.do("POST", "/v1/invoices/"+inv.ID+"/cancel", e.issue, `{"reason":"wrong buyer"}`)
	e.wantStatus(r, http.StatusOK)
	want := `{"id":"` + inv.ID + `","number":"CH1/26-27/00001","status":"cancelled","cancelled_at":"2026-11-29T04:30:00.000000Z"}`
	if string(r.body) != want {
		t.Fatalf("cancel with an issue-only key answers\n%s\nwant\n%s", r.body, want)
	}
	// With read, the whole invoice as before.
	inv2 := e.mustIssue("CH1", "")
	r = e.do("POST", "/v1/invoices/"+inv2.ID+"/cancel", e.all, `{"reason":"x"}`)
	e.wantStatus(r, http.StatusOK)
	if !strings.Contains(string(r.body), `"items":[`) || !strings.Contains(string(r.body), `"public_id":"`+inv2.PublicID+`"`) {
		t.Fatalf("cancel with a read key answers %s, want the whole invoice", r.body)
	}
}

func TestFYTurnover(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) {
		c.Now = func() time.Time { return time.Date(2026, 4, 1, 9, 0, 0, 0, gst.IST) }
		c.BackdateDays = 1
	})
	a := e.mustIssue("CH1", "2026-03-31")
	b := e.mustIssue("CH1", "2026-04-01")
	c := e.mustIssue("CH1", "") // today in IST: 2026-04-01
	if a.Number != "CH1/25-26/00001" || a.FY != "2025-26" {
		t.Fatalf("2026-03-31 gave %s %s", a.Number, a.FY)
	}
	if b.Number != "CH1/26-27/00001" || b.FY != "2026-27" || c.Number != "CH1/26-27/00002" {
		t.Fatalf("2026-04-01 gave %s %s, then %s", b.Number, b.FY, c.Number)
	}
	// The old year goes on where it was.
	if d := e.mustIssue("CH1", "2026-03-31"); d.Number != "CH1/25-26/00002" {
		t.Fatalf("second 2026-03-31 gave %s", d.Number)
	}
	e.wantError(e.do("POST", "/v1/series/CH1/invoices", e.all, issueJSON("2026-03-30")), 422, "invalid_date")
	r := e.do("GET", "/v1/series/CH1/invoices?fy=2025-26", e.read, "")
	e.wantStatus(r, 200)
	var list struct {
		Invoices   []invoiceOut `json:"invoices"`
		NextCursor *string      `json:"next_cursor"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Invoices) != 2 || list.NextCursor != nil {
		t.Fatalf("2025-26 list %s", r.body)
	}
}

func TestDateOrderAndBounds(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.BackdateDays = 5 })
	e.mustIssue("CH1", "2026-11-28")
	e.wantError(e.do("POST", "/v1/series/CH1/invoices", e.all, issueJSON("2026-11-27")), 409, "date_out_of_order")
	e.wantError(e.do("POST", "/v1/series/CH1/invoices", e.all, issueJSON("2026-11-30")), 422, "invalid_date")
	e.wantError(e.do("POST", "/v1/series/CH1/invoices", e.all, issueJSON("2026-11-23")), 422, "invalid_date")
	e.wantError(e.do("POST", "/v1/series/CH1/invoices", e.all, issueJSON("2026-02-30")), 422, "invalid_date")
	if inv := e.mustIssue("CH1", "2026-11-28"); inv.Serial != 2 {
		t.Fatalf("serial %d, want 2", inv.Serial)
	}
	if inv := e.mustIssue("CH1", "2026-11-29"); inv.Serial != 3 {
		t.Fatalf("serial %d, want 3", inv.Serial)
	}
}

func TestCreditNoteNeedsOriginal(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.createSeries("CN", "credit_note", "CN/{FY}/{SEQ:4}")
	item := `"items":[{"description":"Refund","hsn":"0902","quantity":"1","unit_price":"10","gst_rate":"5"}]`
	note := func(original string) resp {
		return e.do("POST", "/v1/series/CN/invoices", e.all, `{"original":`+original+`,`+item+`}`)
	}
	e.wantError(e.do("POST", "/v1/series/CN/invoices", e.all, `{`+item+`}`), 422, "invalid_invoice")
	orig := e.mustIssue("CH1", "2026-11-29")

	// An original this seller did not issue here is refused, and no number is used.
	e.wantError(note(`{"number":"XX/99/1","invoice_date":"2026-11-20"}`), 422, "original_not_found")
	e.wantError(note(`{"number":"CH1/26-27/00002","invoice_date":"2026-11-29"}`), 422, "original_not_found")
	e.wantError(note(`{"number":"CH1/26-27/00001","invoice_date":"2026-11-28"}`), 422, "original_not_found") // wrong date
	other := testfactory.Seller(t, e.pool, &testfactory.SellerOpts{GSTIN: otherGSTIN, Name: "Other Traders"})
	otherKey := mustKey(t, e.pool, other.ID, apikey.ScopeIssue, apikey.ScopeManage)
	r := e.do("POST", "/v1/series", otherKey, `{"code":"CN","doc_type":"credit_note","format":"CN/{FY}/{SEQ:4}"}`)
	e.wantStatus(r, 201)
	e.wantError(e.do("POST", "/v1/series/CN/invoices", otherKey, `{"original":{"number":"CH1/26-27/00001","invoice_date":"2026-11-29"},`+item+`}`), 422, "original_not_found")

	r = note(`{"number":"ch1/26-27/00001","invoice_date":"2026-11-29"}`)
	e.wantStatus(r, 201)
	if !strings.Contains(string(r.body), `"original":{"number":"`+orig.Number+`","invoice_date":"2026-11-29"}`) ||
		!strings.Contains(string(r.body), `"number":"CN/26-27/0001"`) || !strings.Contains(string(r.body), `"doc_type":"credit_note"`) {
		t.Fatalf("credit note %s", r.body)
	}
	// A note does not correct a note.
	e.wantError(note(`{"number":"CN/26-27/0001","invoice_date":"2026-11-29"}`), 422, "invalid_invoice")

	// An original issued elsewhere is declared, with a reason.
	e.wantError(note(`{"number":"OLD/118","invoice_date":"2026-10-02","external":true}`), 422, "invalid_invoice")
	e.wantError(note(`{"number":"OLD/118","invoice_date":"2026-10-02","reason":"Tally"}`), 422, "invalid_invoice")
	r = note(`{"number":"OLD/118","invoice_date":"2026-10-02","external":true,"reason":"issued in Tally before the move to invoiced"}`)
	e.wantStatus(r, 201)
	ext := e.invoice(r)
	if ext.Number != "CN/26-27/0002" {
		t.Fatalf("external note numbered %s, want CN/26-27/0002 (refusals used no number)", ext.Number)
	}
	r = e.do("GET", "/v1/invoices/"+ext.ID, e.read, "")
	e.wantStatus(r, 200)
	if !strings.Contains(string(r.body), `"original":{"number":"OLD/118","invoice_date":"2026-10-02","external":true,"reason":"issued in Tally before the move to invoiced"}`) {
		t.Fatalf("external note %s", r.body)
	}
	e.wantError(e.do("POST", "/v1/series/CH1/invoices", e.all, `{"original":{"number":"X1","invoice_date":"2026-11-20"},`+item+`}`), 422, "invalid_invoice")
}

func TestBuyerIsNotTheSeller(t *testing.T) {
	t.Parallel()
	e := setup(t)
	item := `"items":[{"description":"Chai","hsn":"0902","quantity":"1","unit_price":"10","gst_rate":"5"}]`
	e.wantError(e.do("POST", "/v1/series/CH1/invoices", e.all, `{"buyer":{"gstin":"`+sellerGSTIN+`","name":"Self"},`+item+`}`), 422, "invalid_invoice")
	r := e.do("POST", "/v1/series/CH1/invoices", e.all, `{"buyer":{"gstin":"`+buyerGSTIN+`","name":"Bengaluru Traders",`+buyerAddress+`},`+item+`}`)
	e.wantStatus(r, 201)
	if inv := e.invoice(r); inv.Serial != 1 {
		t.Fatalf("serial %d, want 1: the refusal used a number", inv.Serial)
	}
}

func TestListInvoicesPaging(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for range 5 {
		e.mustIssue("CH1", "")
	}
	var serials []int64
	path := "/v1/series/CH1/invoices?fy=2026-27&limit=2"
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("too many pages")
		}
		r := e.do("GET", path, e.read, "")
		e.wantStatus(r, 200)
		var list struct {
			Invoices   []invoiceOut `json:"invoices"`
			NextCursor *string      `json:"next_cursor"`
		}
		if err := json.Unmarshal(r.body, &list); err != nil {
			t.Fatal(err)
		}
		for _, inv := range list.Invoices {
			serials = append(serials, inv.Serial)
		}
		if list.NextCursor == nil {
			if !strings.HasSuffix(string(r.body), `"next_cursor":null}`) {
				t.Fatalf("last page %s", r.body)
			}
			break
		}
		path = "/v1/series/CH1/invoices?fy=2026-27&limit=2&cursor=" + *list.NextCursor
	}
	if fmt.Sprint(serials) != "[1 2 3 4 5]" {
		t.Fatalf("serials %v", serials)
	}
	r := e.do("GET", "/v1/series/CH1/invoices", e.read, "") // default fy: the current one
	if c := strings.Count(string(r.body), `"serial":`); c != 5 {
		t.Fatalf("default list holds %d invoices", c)
	}
	r = e.do("GET", "/v1/series/CH1/invoices?fy=2025-26", e.read, "")
	if string(r.body) != `{"invoices":[],"next_cursor":null}` {
		t.Fatalf("empty year %s", r.body)
	}
}

func TestReceipt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	addr := "Platform 1, Pune Junction, Pune 411001"
	e.setContact(addr, "+91 20 2612 0000")
	r := e.do("POST", "/v1/series/CH1/invoices", e.all, `{"buyer":{"name":"<script>alert(1)</script> & Sons"},`+
		`"items":[{"description":"Masala <b>chai</b>","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]}`)
	e.wantStatus(r, 201)
	inv := e.invoice(r)
	page := e.do("GET", "/r/"+inv.PublicID, "", "")
	e.wantStatus(page, 200)
	body := string(page.body)
	for _, s := range []string{"CH1/26-27/00001", "27AAPFU0939F1ZV", "Chai &amp; Co &lt;Pune&gt;", "&lt;script&gt;alert(1)&lt;/script&gt; &amp; Sons",
		"Masala &lt;b&gt;chai&lt;/b&gt;", "29 Nov 2026", "₹ 21.00", "₹ 0.50", "Tax Invoice",
		// Rule 46: the seller's address and state, the place of supply with its state's name.
		addr, "State: 27-Maharashtra", `Phone <span class="num">&#43;91 20 2612 0000</span>`, "Place of supply</td><td>27-Maharashtra",
		"Issued 29 Nov 2026, 10:00 IST", "Rupees Twenty One Only", "<th class=\"n\">CGST ₹</th>",
		"@page{size:A4;margin:12mm}", "@media print{"} {
		if !strings.Contains(body, s) {
			t.Fatalf("receipt lacks %q:\n%s", s, body)
		}
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, "CANCELLED") || strings.Contains(body, "04:30") || strings.Contains(body, "size:80mm") {
		t.Fatalf("receipt holds raw HTML, a cancel banner, a UTC time or the roll layout:\n%s", body)
	}
	for h, want := range map[string]string{"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", "X-Robots-Tag": "noindex"} {
		if got := page.header.Get(h); got != want {
			t.Fatalf("%s %q, want %q", h, got, want)
		}
	}
	// 80 mm thermal paper.
	roll := string(e.do("GET", "/r/"+inv.PublicID+"?paper=80mm", "", "").body)
	if !strings.Contains(roll, "@page{size:80mm 297mm;margin:3mm 4mm}") || strings.Contains(roll, "size:A4") || !strings.Contains(roll, "max-width:72mm") {
		t.Fatalf("80 mm receipt:\n%s", roll)
	}
	e.wantStatus(e.do("POST", "/v1/invoices/"+inv.ID+"/cancel", e.all, `{"reason":"typo <i>"}`), 200)
	page = e.do("GET", "/r/"+inv.PublicID, "", "")
	if !strings.Contains(string(page.body), `<div class="cancelled" role="alert">CANCELLED<small>on 29 Nov 2026, 10:00 IST: <bdi>typo &lt;i&gt;</bdi>`) ||
		!strings.Contains(string(page.body), "<title>CANCELLED Tax Invoice") {
		t.Fatalf("cancelled receipt lacks banner:\n%s", page.body)
	}
	for _, id := range []string{"aaaaaaaaaaaaaaaaaaaaaaaaaa", "nope", inv.ID} {
		nf := e.do("GET", "/r/"+id, "", "")
		if nf.status != 404 || nf.header.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(string(nf.body), "Receipt not found") {
			t.Fatalf("unknown receipt %q: %d %s %s", id, nf.status, nf.header.Get("Content-Type"), nf.body)
		}
	}
}

func TestReceiptInterState(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.do("POST", "/v1/series/CH1/invoices", e.all, `{"buyer":{"gstin":"`+buyerGSTIN+`","name":"Bengaluru Traders",`+buyerAddress+`},"place_of_supply":"29",`+
		`"items":[{"description":"Masala chai","hsn":"0902","quantity":"1000","unit_price":"123.45","gst_rate":"5"}]}`)
	e.wantStatus(r, 201)
	body := string(e.do("GET", "/r/"+e.invoice(r).PublicID, "", "").body)
	for _, s := range []string{"Place of supply</td><td>29-Karnataka", `GSTIN <span class="num">` + buyerGSTIN, "<th class=\"n\">IGST ₹</th>", "₹ 129622.50",
		"Rupees One Lakh Twenty Nine Thousand Six Hundred Twenty Two and Fifty Paise Only"} {
		if !strings.Contains(body, s) {
			t.Fatalf("receipt lacks %q:\n%s", s, body)
		}
	}
	if strings.Contains(body, "CGST") {
		t.Fatalf("inter-state receipt shows CGST:\n%s", body)
	}
}

func TestSeriesCreateAndList(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.do("POST", "/v1/series", e.all, `{"code":"bos","doc_type":"bill_of_supply","format":"BOS-{SEQ:6}","shop":"Kiosk 2"}`)
	e.wantStatus(r, 201)
	var s struct {
		Code, DocType, Format, Shop string
		Capacity                    int64
		Years                       []any
	}
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatal(err)
	}
	if s.Code != "BOS" || s.Format != "BOS-{SEQ:6}" || s.Shop != "Kiosk 2" || s.Capacity != 999999 || s.Years == nil || len(s.Years) != 0 {
		t.Fatalf("created series %s", r.body)
	}
	if !strings.Contains(string(r.body), `"doc_type":"bill_of_supply"`) {
		t.Fatalf("created series %s", r.body)
	}
	e.mustIssue("CH1", "")
	r = e.do("GET", "/v1/series", e.read, "")
	e.wantStatus(r, 200)
	for _, want := range []string{`"code":"BOS"`, `"code":"CH1","doc_type":"invoice","format":"CH1/{FY}/{SEQ:5}","shop":"Pune station stall","capacity":99999`,
		`"years":[{"fy":"2026-27","last_serial":1,"last_number":"CH1/26-27/00001","last_invoice_date":"2026-11-29"}]`} {
		if !strings.Contains(string(r.body), want) {
			t.Fatalf("series list %s lacks %s", r.body, want)
		}
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.KeyCacheTTL = -1 })
	ctx := t.Context()
	k := mustKey(t, e.pool, e.seller.ID, "read", "read")
	prefix, secret, ok := apikey.Parse(k)
	if !ok || len(k) != apikey.Len || len(secret) != 32 || len(prefix) != 8 {
		t.Fatalf("key %q does not parse", k)
	}
	var hash []byte
	var scopes []string
	if err := e.pool.QueryRow(ctx, `SELECT secret_hash, scopes FROM api_keys WHERE prefix = $1`, prefix).Scan(&hash, &scopes); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(hash), secret) || len(hash) != 32 || fmt.Sprint(scopes) != "[read]" {
		t.Fatalf("stored hash %x scopes %v", hash, scopes)
	}
	if _, err := apikey.Create(ctx, e.pool, e.seller.ID, nil); err == nil {
		t.Fatal("no scopes accepted")
	}
	if _, err := apikey.Create(ctx, e.pool, e.seller.ID, []string{"admin"}); err == nil {
		t.Fatal("unknown scope accepted")
	}
	if _, err := apikey.Create(ctx, e.pool, 999999, []string{"read"}); err != sellers.ErrNotFound {
		t.Fatalf("unknown seller: %v", err)
	}
	e.wantStatus(e.do("GET", "/v1/series", k, ""), 200)
	if err := apikey.Revoke(ctx, e.pool, k); err != nil {
		t.Fatal(err)
	}
	e.wantError(e.do("GET", "/v1/series", k, ""), 401, "unauthorized")
	if err := apikey.Revoke(ctx, e.pool, prefix); err == nil {
		t.Fatal("revoking twice succeeded")
	}
	if err := apikey.Revoke(ctx, e.pool, "zz"); err == nil {
		t.Fatal("revoking a bad prefix succeeded")
	}
}

// TestKeyCacheExpires: a key looked up recently is trusted for KeyCacheTTL;
// once that passes, its revocation takes effect.
func TestKeyCacheExpires(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(testNow.UnixNano())
	e := setup(t, func(c *Config) {
		c.Now = func() time.Time { return time.Unix(0, now.Load()) }
		c.KeyCacheTTL = 5 * time.Second
	})
	k := mustKey(t, e.pool, e.seller.ID, apikey.ScopeRead)
	e.wantStatus(e.do("GET", "/v1/series", k, ""), http.StatusOK)
	if err := apikey.Revoke(t.Context(), e.pool, k[3:11]); err != nil {
		t.Fatal(err)
	}
	e.wantStatus(e.do("GET", "/v1/series", k, ""), http.StatusOK) // still cached
	now.Add(int64(6 * time.Second))
	e.wantError(e.do("GET", "/v1/series", k, ""), http.StatusUnauthorized, "unauthorized")
	// A wrong secret with a cached prefix is still refused.
	e.wantError(e.do("GET", "/v1/series", e.read[:12]+"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", ""), http.StatusUnauthorized, "unauthorized")
}

// wrongSecret returns key with its last secret character changed.
func wrongSecret(key string) string {
	last := key[len(key)-1]
	repl := byte('a')
	if last == 'a' {
		repl = 'b'
	}
	return key[:len(key)-1] + string(repl)
}

func TestPeriodLocks(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.BackdateDays = 60 })
	dbtest.SetClock(t, e.pool, testNow) // October has ended by the database's clock too, November not
	oct := e.mustIssue("CH1", "2026-10-20")
	e.wantStatus(e.do("POST", "/v1/series/CH1/invoices", e.all, issueJSON("2026-10-21"), "Idempotency-Key", "oct-21"), 201)
	e.wantError(e.do("POST", "/v1/periods/112026/lock", e.all, ""), 422, "period_not_ended") // November is today's month
	e.wantError(e.do("POST", "/v1/periods/132026/lock", e.all, ""), 422, "invalid_period")
	e.wantError(e.do("POST", "/v1/periods/102026/lock", e.read, ""), 403, "forbidden")
	r := e.do("POST", "/v1/periods/102026/lock", e.all, "")
	e.wantStatus(r, 201)
	if !strings.Contains(string(r.body), `"fp":"102026"`) || !strings.Contains(string(r.body), `"locked_by":"key ik_`) {
		t.Fatalf("lock: %s", r.body)
	}
	e.wantStatus(e.do("POST", "/v1/periods/102026/lock", e.all, ""), 200)

	// October is closed to backdating and cancelling; November is open.
	r = e.do("POST", "/v1/series/CH1/invoices", e.all, issueJSON("2026-10-25"))
	e.wantError(r, 409, "period_locked")
	if !strings.Contains(string(r.body), "credit or debit note") {
		t.Fatalf("period_locked message: %s", r.body)
	}
	e.wantError(e.do("POST", "/v1/invoices/"+oct.ID+"/cancel", e.all, `{"reason":"typo"}`), 409, "period_locked")
	// A retry of a request answered before the lock still replays its answer.
	r = e.do("POST", "/v1/series/CH1/invoices", e.all, issueJSON("2026-10-21"), "Idempotency-Key", "oct-21")
	e.wantStatus(r, 201)
	if r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry after the lock was not a replay: %v %s", r.header, r.body)
	}
	if inv := e.mustIssue("CH1", "2026-11-29"); inv.Serial != 3 {
		t.Fatalf("serial %d, want 3: a refusal used a number", inv.Serial)
	}

	r = e.do("GET", "/v1/periods", e.read, "")
	e.wantStatus(r, 200)
	var list struct {
		Locks   []map[string]string `json:"locks"`
		History []map[string]string `json:"history"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Locks) != 1 || list.Locks[0]["fp"] != "102026" ||
		len(list.History) != 1 || list.History[0]["action"] != "lock" {
		t.Fatalf("periods: %s (%v)", r.body, err)
	}
	// Unlocking has no route.
	e.wantError(e.do("POST", "/v1/periods/102026/unlock", e.all, ""), 404, "not_found")
}

func TestSeriesOpening(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.BackdateDays = 60 })
	opening := `"opening":{"fy":"2026-27","last_serial":1233,"last_invoice_date":"2026-11-15","last_number":"%s"}`
	// A last number the format does not render for the serial is refused, and no series is made.
	e.wantError(e.do("POST", "/v1/series", e.all, `{"code":"CH2","doc_type":"invoice","format":"CH2/{FY}/{SEQ:5}",`+fmt.Sprintf(opening, "CH2/26-27/01232")+`}`), 422, "invalid_invoice")
	e.wantError(e.do("POST", "/v1/series", e.all, `{"code":"CH2","doc_type":"invoice","format":"CH2/{FY}/{SEQ:5}","opening":{"fy":"2026-27","last_serial":1233,"last_invoice_date":"2026-12-15","last_number":"CH2/26-27/01233"}}`), 422, "invalid_invoice")
	r := e.do("POST", "/v1/series", e.all, `{"code":"CH2","doc_type":"invoice","format":"CH2/{FY}/{SEQ:5}",`+fmt.Sprintf(opening, "ch2/26-27/01233")+`}`)
	e.wantStatus(r, 201)
	if !strings.Contains(string(r.body), `"last_serial":1233`) {
		t.Fatalf("series with opening: %s", r.body)
	}
	// Nothing dated before the last declared invoice; then 1234.
	e.wantError(e.do("POST", "/v1/series/CH2/invoices", e.all, issueJSON("2026-11-14")), 409, "date_out_of_order")
	inv := e.invoice(e.do("POST", "/v1/series/CH2/invoices", e.all, issueJSON("2026-11-15")))
	if inv.Serial != 1234 || inv.Number != "CH2/26-27/01234" {
		t.Fatalf("first invoice after the opening: %+v", inv)
	}
	// A credit note may correct an invoice declared as issued before invoiced.
	e.createSeries("CN", "credit_note", "CN/{FY}/{SEQ:4}")
	item := `"items":[{"description":"Refund","hsn":"0902","quantity":"1","unit_price":"10","gst_rate":"5"}]`
	e.wantStatus(e.do("POST", "/v1/series/CN/invoices", e.all, `{"original":{"number":"CH2/26-27/00017","invoice_date":"2026-10-02"},`+item+`}`), 201)
	e.wantError(e.do("POST", "/v1/series/CN/invoices", e.all, `{"original":{"number":"CH2/26-27/01300","invoice_date":"2026-10-02"},`+item+`}`), 422, "original_not_found")
	e.wantError(e.do("POST", "/v1/series/CN/invoices", e.all, `{"original":{"number":"CH2/26-27/00017","invoice_date":"2026-11-16"},`+item+`}`), 422, "original_not_found")
	// The audit reports 1..1233 as declared, not as a gap, and the chain verifies.
	r = e.do("GET", "/v1/series/CH2/audit?fy=2026-27&format=json", e.read, "")
	e.wantStatus(r, 200)
	var doc struct {
		Summary struct {
			Intact  bool                      `json:"intact"`
			Gaps    []map[string]int64        `json:"gaps"`
			Opening *map[string]any           `json:"opening"`
			Total   int64                     `json:"total"`
			Chain   string                    `json:"chain"`
			Locked  []map[string]any          `json:"locked_periods"`
			X       map[string]map[string]any `json:"-"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Summary
	if !s.Intact || len(s.Gaps) != 0 || s.Opening == nil || (*s.Opening)["last_number"] != "CH2/26-27/01233" || (*s.Opening)["declared_by"] == "" || s.Total != 1 || s.Chain != "ok" {
		t.Fatalf("audit with an opening: %s", r.body)
	}
}

// TestUndatedInvoiceAtISTMidnight: a till that sends no invoice_date ten
// minutes after IST midnight on 1 April gets 1 April and the new year's
// first number, although the UTC date is still 31 March; ten minutes
// before midnight it gets 31 March and the old year. Alone and in a batch.
func TestUndatedInvoiceAtISTMidnight(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	clock.Store(time.Date(2027, 3, 31, 23, 50, 0, 0, gst.IST).UnixNano())
	e := setup(t, func(c *Config) { c.Now = func() time.Time { return time.Unix(0, clock.Load()) } })
	if inv := e.mustIssue("CH1", ""); inv.InvoiceDate != "2027-03-31" || inv.Number != "CH1/26-27/00001" {
		t.Fatalf("undated at 23:50 IST on 31 March: %s %s, want 2027-03-31 CH1/26-27/00001", inv.InvoiceDate, inv.Number)
	}
	clock.Store(time.Date(2027, 4, 1, 0, 10, 0, 0, gst.IST).UnixNano()) // 2027-03-31T18:40Z
	if inv := e.mustIssue("CH1", ""); inv.InvoiceDate != "2027-04-01" || inv.FY != "2027-28" || inv.Number != "CH1/27-28/00001" {
		t.Fatalf("undated at 00:10 IST on 1 April: %s %s %s, want 2027-04-01 2027-28 CH1/27-28/00001", inv.InvoiceDate, inv.FY, inv.Number)
	}
	r := e.do("POST", "/v1/series/CH1/invoices/batch", e.all, `{"invoices":[{"idempotency_key":"b1",`+strings.TrimPrefix(issueJSON(""), "{")+`]}`)
	e.wantStatus(r, http.StatusOK)
	if !strings.Contains(string(r.body), `"invoice_date":"2027-04-01"`) || !strings.Contains(string(r.body), `"number":"CH1/27-28/00002"`) {
		t.Fatalf("undated batch item at 00:10 IST on 1 April: %s", r.body)
	}
}
