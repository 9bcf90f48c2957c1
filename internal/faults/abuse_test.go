package faults

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/series"
)

// abuseEnv is a real HTTP server (api.New behind httptest) with two
// sellers: A (series CH1) and B (series SB1).
type abuseEnv struct {
	t                                   *testing.T
	url                                 string
	aAll, aRead, aIssue, aRevoked, bAll string
}

func newAbuseEnv(t *testing.T) *abuseEnv {
	t.Helper()
	ctx := t.Context()
	pool := dbtest.New(t)
	a := testfactory.Seller(t, pool, &testfactory.SellerOpts{GSTIN: sellerGSTIN, Name: "Seller A"})
	b := testfactory.Seller(t, pool, &testfactory.SellerOpts{GSTIN: otherGSTIN, Name: "Seller B"})
	key := func(id int64, scopes ...string) string {
		k, err := apikey.Create(ctx, pool, id, scopes)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	e := &abuseEnv{t: t,
		aAll: key(a.ID, apikey.ScopeIssue, apikey.ScopeRead, apikey.ScopeManage), aRead: key(a.ID, apikey.ScopeRead),
		aIssue: key(a.ID, apikey.ScopeIssue), aRevoked: key(a.ID, apikey.ScopeIssue, apikey.ScopeRead), bAll: key(b.ID, apikey.ScopeIssue, apikey.ScopeRead)}
	if err := apikey.Revoke(ctx, pool, e.aRevoked); err != nil {
		t.Fatal(err)
	}
	for _, s := range []series.NewSeries{
		{SellerID: a.ID, Code: "CH1", DocType: "invoice", Format: "CH1/{FY}/{SEQ:6}"},
		{SellerID: b.ID, Code: "SB1", DocType: "invoice", Format: "SB1/{FY}/{SEQ:6}"},
	} {
		if _, err := series.CreateSeries(ctx, pool, s); err != nil {
			t.Fatal(err)
		}
	}
	// The key cache is off so that a revoked key is refused at once.
	ts := httptest.NewServer(api.New(api.Config{Pool: pool, KeyCacheTTL: -1, Citus: dbtest.Citus(t)}).Handler())
	t.Cleanup(ts.Close)
	e.url = ts.URL
	return e
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request; hdr holds header name/value pairs. A nil body sends
// none; a body of type io.Reader is sent as is (chunked if not a string).
func (e *abuseEnv) do(method, path string, body any, hdr ...string) reply {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case string:
		rd = strings.NewReader(b)
	case io.Reader:
		rd = b
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{Timeout: 30 * time.Second}
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return reply{res.StatusCode, res.Header, b}
}

// want4xx checks a 4xx (status, if non-zero) with exactly the JSON error body.
func want4xx(t *testing.T, name string, r reply, status int) {
	t.Helper()
	if r.status >= 500 || r.status < 400 || status != 0 && r.status != status {
		t.Errorf("%s: status %d, want %v (4xx); body %.200s", name, r.status, status, r.body)
		return
	}
	var body map[string]map[string]string
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || len(body) != 1 || len(body["error"]) != 2 || body["error"]["code"] == "" || body["error"]["message"] == "" {
		t.Errorf("%s: body %.200s is not {\"error\":{\"code\",\"message\"}} (%v)", name, r.body, err)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q", name, ct)
	}
}

func item(fields string) string {
	return `{"items":[{` + fields + `}]}`
}

const goodItem = `"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"`

// TestBadInputConsumesNoNumber sends malformed and hostile requests to the
// real HTTP server: each must get a 4xx with the JSON error body, never a
// 5xx, and none may consume a number (the next valid invoice takes the
// next serial).
func TestBadInputConsumesNoNumber(t *testing.T) {
	t.Parallel()
	e := newAbuseEnv(t)
	json1 := []string{"Authorization", "Bearer " + e.aAll, "Content-Type", "application/json"}
	issue := func(body any, hdr ...string) reply {
		return e.do("POST", "/v1/series/CH1/invoices", body, append(append([]string{}, json1...), hdr...)...)
	}
	serial := func(r reply) int64 {
		t.Helper()
		if r.status != http.StatusCreated {
			t.Fatalf("valid invoice: status %d: %s", r.status, r.body)
		}
		var a answer
		json.Unmarshal(r.body, &a)
		return a.Serial
	}
	if s := serial(issue(item(goodItem))); s != 1 {
		t.Fatalf("first serial %d", s)
	}

	items := func(n int) string {
		var sb strings.Builder
		sb.WriteString(`{"items":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(`{` + goodItem + `}`)
		}
		sb.WriteString(`]}`)
		return sb.String()
	}
	lookalikeGSTIN := "27AAPFU0939F1Z\u0412" // Cyrillic VE for the final V
	cases := []struct {
		name   string
		body   any
		hdr    []string
		status int
	}{
		{"empty body", "", nil, 400},
		{"not JSON", "hello", nil, 400},
		{"JSON array", `[]`, nil, 400},
		{"JSON null", `null`, nil, 0},
		{"trailing data", item(goodItem) + `{}`, nil, 400},
		{"unknown field", `{"items":[{` + goodItem + `}],"discount":"100"}`, nil, 400},
		{"unknown item field", item(goodItem + `,"free":"yes"`), nil, 400},
		{"deep JSON", strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000), nil, 400},
		{"deep arrays", `{"items":` + strings.Repeat(`[`, 100000) + strings.Repeat(`]`, 100000) + `}`, nil, 400},
		{"oversized body (Content-Length)", `{"items":[{"description":"` + strings.Repeat("x", 2<<20) + `"}]}`, nil, 413},
		{"oversized body (chunked)", io.MultiReader(strings.NewReader(`{"items":[{"description":"`), strings.NewReader(strings.Repeat("y", 2<<20))), nil, 413},
		{"251 items", items(251), nil, 422},
		{"5000 items", items(5000), nil, 422},
		{"quantity as JSON number", item(`"description":"x","hsn":"0902","quantity":2,"unit_price":"10.00","gst_rate":"5"`), nil, 422},
		{"price as JSON number with exponent", item(`"description":"x","hsn":"0902","quantity":"2","unit_price":1e400,"gst_rate":"5"`), nil, 422},
		{"quantity with exponent", item(`"description":"x","hsn":"0902","quantity":"1e3","unit_price":"10.00","gst_rate":"5"`), nil, 422},
		{"price with 30 decimals", item(`"description":"x","hsn":"0902","quantity":"2","unit_price":"10.000000000000000000000000000001","gst_rate":"5"`), nil, 422},
		{"huge price", item(`"description":"x","hsn":"0902","quantity":"2","unit_price":"99999999999999999999999999999999","gst_rate":"5"`), nil, 422},
		{"negative quantity", item(`"description":"x","hsn":"0902","quantity":"-2","unit_price":"10.00","gst_rate":"5"`), nil, 422},
		{"zero quantity", item(`"description":"x","hsn":"0902","quantity":"0","unit_price":"10.00","gst_rate":"5"`), nil, 422},
		{"negative price", item(`"description":"x","hsn":"0902","quantity":"2","unit_price":"-10.00","gst_rate":"5"`), nil, 422},
		{"NaN price", item(`"description":"x","hsn":"0902","quantity":"2","unit_price":"NaN","gst_rate":"5"`), nil, 422},
		{"bad gst rate", item(`"description":"x","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"17"`), nil, 422},
		{"no items", `{"items":[]}`, nil, 422},
		{"SQL in HSN", item(`"description":"x","hsn":"0902' OR '1'='1","quantity":"2","unit_price":"10.00","gst_rate":"5"`), nil, 422},
		{"SQL in buyer GSTIN", `{"buyer":{"gstin":"27AAPFU0939F1ZV'; DROP TABLE invoices; --","name":"x"},"items":[{` + goodItem + `}]}`, nil, 422},
		{"SQL in place of supply", `{"place_of_supply":"27' OR 1=1 --","items":[{` + goodItem + `}]}`, nil, 422},
		{"look-alike GSTIN (Cyrillic)", `{"buyer":{"gstin":"` + lookalikeGSTIN + `","name":"x"},"items":[{` + goodItem + `}]}`, nil, 422},
		{"look-alike GSTIN (full-width digits)", `{"buyer":{"gstin":"２７AAPFU0939F1ZV","name":"x"},"items":[{` + goodItem + `}]}`, nil, 422},
		{"look-alike HSN (Arabic-Indic digits)", item(`"description":"x","hsn":"٠٩٠٢","quantity":"2","unit_price":"10.00","gst_rate":"5"`), nil, 422},
		{"future date", `{"invoice_date":"2999-01-01","items":[{` + goodItem + `}]}`, nil, 422},
		{"impossible date", `{"invoice_date":"2026-02-30","items":[{` + goodItem + `}]}`, nil, 422},
		{"date with time", `{"invoice_date":"2026-05-01T00:00:00Z","items":[{` + goodItem + `}]}`, nil, 422},
		{"text/plain", item(goodItem), []string{"Content-Type", "text/plain"}, 415},
		{"form", "a=b", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415},
		{"json with latin-1 charset", item(goodItem), []string{"Content-Type", "application/json; charset=latin1"}, 415},
		{"json-patch", item(goodItem), []string{"Content-Type", "application/json-patch+json"}, 415},
		{"no content type", item(goodItem), []string{"Content-Type", ""}, 415},
		{"invalid UTF-8 in description", item(`"description":"\xff\xfe","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"`), nil, 0},
		{"NUL in description", item(`"description":"a\u0000b","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"`), nil, 422},
		{"Idempotency-Key too long", item(goodItem), []string{"Idempotency-Key", strings.Repeat("k", 256)}, 400},
		{"Idempotency-Key not ASCII", item(goodItem), []string{"Idempotency-Key", "ключ"}, 400},
	}
	for _, c := range cases {
		want4xx(t, c.name, issue(c.body, c.hdr...), c.status)
	}

	// Hostile series codes in the path: 4xx, never a number.
	for _, code := range []string{"CH%EF%BC%91" /* CH + full-width 1 */, "%D0%A1%D0%9D1" /* Cyrillic СН1 */, "CH1%27%20OR%20%271%27%3D%271", "CH1%3B%20DROP%20TABLE%20invoices", strings.Repeat("C", 300), "%00"} {
		want4xx(t, "series code "+code, e.do("POST", "/v1/series/"+code+"/invoices", item(goodItem), json1...), 0)
	}

	// An SQL-looking description is ordinary text: stored verbatim.
	sqlText := `Robert'); DROP TABLE invoices;-- ` + "\u0421\u041d1"
	r := issue(item(`"description":` + mustJSON(sqlText) + `,"hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"`))
	if s := serial(r); s != 2 {
		t.Errorf("after %d bad requests the next valid invoice has serial %d, want 2: a refused request consumed a number", len(cases), s)
	}
	if !bytes.Contains(r.body, []byte(`DROP TABLE invoices`)) {
		t.Errorf("SQL-looking description not stored verbatim: %s", r.body)
	}
	if s := serial(issue(item(goodItem))); s != 3 {
		t.Errorf("serial %d, want 3", s)
	}
	verdict := "PASS"
	if t.Failed() {
		verdict = "FAIL"
	}
	t.Logf("FAULTS bad-input cases=%d checks=%s", len(cases)+6, verdict)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestKeysRevealNothing checks wrong, revoked, other sellers' and
// under-scoped keys: 401/403/404 with the JSON error body, no number
// consumed, and answers that do not tell another seller's series or
// invoice apart from a nonexistent one.
func TestKeysRevealNothing(t *testing.T) {
	t.Parallel()
	e := newAbuseEnv(t)
	body := item(goodItem)
	post := func(key, code string) reply {
		h := []string{"Content-Type", "application/json"}
		if key != "" {
			h = append(h, "Authorization", "Bearer "+key)
		}
		return e.do("POST", "/v1/series/"+code+"/invoices", body, h...)
	}
	// B issues one invoice, so that B has something A might find.
	rb := post(e.bAll, "SB1")
	if rb.status != 201 {
		t.Fatalf("B's invoice: %d %s", rb.status, rb.body)
	}
	var bInv struct {
		ID       string `json:"id"`
		PublicID string `json:"public_id"`
	}
	json.Unmarshal(rb.body, &bInv)

	wrongSecret := e.aAll[:len(e.aAll)-4] + "aaaa"
	if wrongSecret == e.aAll {
		wrongSecret = e.aAll[:len(e.aAll)-4] + "bbbb"
	}
	unknownPrefix := "ik_00000000_" + e.aAll[len("ik_00000000_"):]
	unauth := map[string]reply{
		"missing":        post("", "CH1"),
		"garbage":        post("garbage", "CH1"),
		"wrong secret":   post(wrongSecret, "CH1"),
		"unknown prefix": post(unknownPrefix, "CH1"),
		"revoked":        post(e.aRevoked, "CH1"),
		"basic auth":     e.do("POST", "/v1/series/CH1/invoices", body, "Content-Type", "application/json", "Authorization", "Basic YTpi"),
	}
	var first []byte
	for name, r := range unauth {
		want4xx(t, "key "+name, r, 401)
		if first == nil {
			first = r.body
		} else if !bytes.Equal(first, r.body) {
			t.Errorf("401 bodies differ (%s): %s vs %s: they must not tell a wrong secret from an unknown or revoked key", name, r.body, first)
		}
	}
	want4xx(t, "read-only key issuing", post(e.aRead, "CH1"), 403)
	want4xx(t, "issue-only key reading", e.do("GET", "/v1/series/CH1/invoices", nil, "Authorization", "Bearer "+e.aIssue), 403)

	// Another seller's series is exactly as absent as a nonexistent one.
	other, none := post(e.aAll, "SB1"), post(e.aAll, "ZZ9")
	want4xx(t, "other seller's series", other, 404)
	// The message names the code the client sent, and nothing else.
	same := func(o, n reply) bool {
		return o.status == n.status && bytes.Equal(bytes.ReplaceAll(o.body, []byte("SB1"), []byte("ZZ9")), n.body)
	}
	if !same(other, none) {
		t.Errorf("another seller's series answers %d %s, a nonexistent one %d %s: must be identical", other.status, other.body, none.status, none.body)
	}
	otherList := e.do("GET", "/v1/series/SB1/invoices", nil, "Authorization", "Bearer "+e.aAll)
	noneList := e.do("GET", "/v1/series/ZZ9/invoices", nil, "Authorization", "Bearer "+e.aAll)
	if otherList.status != 404 || !same(otherList, noneList) {
		t.Errorf("listing another seller's series: %d %s vs nonexistent %d %s", otherList.status, otherList.body, noneList.status, noneList.body)
	}
	// Another seller's invoice id is exactly as absent as a nonexistent one.
	oi := e.do("GET", "/v1/invoices/"+bInv.ID, nil, "Authorization", "Bearer "+e.aAll)
	ni := e.do("GET", "/v1/invoices/999999999", nil, "Authorization", "Bearer "+e.aAll)
	want4xx(t, "other seller's invoice", oi, 404)
	if !bytes.Equal(oi.body, ni.body) {
		t.Errorf("another seller's invoice answers %s, a nonexistent one %s", oi.body, ni.body)
	}
	oc := e.do("POST", "/v1/invoices/"+bInv.ID+"/cancel", `{"reason":"mine now"}`, "Authorization", "Bearer "+e.aAll, "Content-Type", "application/json")
	nc := e.do("POST", "/v1/invoices/999999999/cancel", `{"reason":"mine now"}`, "Authorization", "Bearer "+e.aAll, "Content-Type", "application/json")
	want4xx(t, "cancel another seller's invoice", oc, 404)
	if !bytes.Equal(oc.body, nc.body) {
		t.Errorf("cancelling another seller's invoice answers %s, a nonexistent one %s", oc.body, nc.body)
	}
	// A guessed receipt link is a 404.
	if r := e.do("GET", "/r/aaaaaaaaaaaaaaaaaaaaaaaaaa", nil); r.status != 404 {
		t.Errorf("guessed receipt link: %d", r.status)
	}
	// /debug/stats is off by default.
	if r := e.do("GET", "/debug/stats", nil); r.status != 404 {
		t.Errorf("/debug/stats without --stats: %d", r.status)
	}
	// Nothing above consumed a number of A's series or changed B's invoice.
	r := post(e.aAll, "CH1")
	var a answer
	json.Unmarshal(r.body, &a)
	if r.status != 201 || a.Serial != 1 {
		t.Errorf("A's first valid invoice after the key abuse: %d serial %d, want 201 serial 1", r.status, a.Serial)
	}
	if r := e.do("GET", "/v1/invoices/"+bInv.ID, nil, "Authorization", "Bearer "+e.bAll); !bytes.Contains(r.body, []byte(`"status":"issued"`)) {
		t.Errorf("B's invoice changed: %s", r.body)
	}
	verdict := "PASS"
	if t.Failed() {
		verdict = "FAIL"
	}
	t.Logf("FAULTS keys unauthorized-variants=%d cross-seller-probes=5 next-serial-after-abuse=%d checks=%s", len(unauth), a.Serial, verdict)
}
