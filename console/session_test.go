package console_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/console"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
)

// page is an HTTP answer.
type page struct {
	status   int
	location string
	body     string
	header   http.Header
}

func get(t *testing.T, c *http.Client, u string) page {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return page{res.StatusCode, res.Header.Get("Location"), string(b), res.Header}
}

func post(t *testing.T, c *http.Client, u string, form url.Values) page {
	t.Helper()
	res, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return page{res.StatusCode, res.Header.Get("Location"), string(b), res.Header}
}

// signIn signs c in with key and returns the session's CSRF token.
func signIn(t *testing.T, f *fixture, c *http.Client, key string) string {
	t.Helper()
	startSession(t, f, c, key)
	return csrfOf(t, get(t, c, f.url+"/console/"))
}

var loginTokenRE = regexp.MustCompile(`name="login_token" value="([^"]+)"`)

// loginToken opens the sign-in form with c (which keeps the form's cookie)
// and returns the form's login_token ("" when it has none).
func loginToken(t *testing.T, f *fixture, c *http.Client) string {
	t.Helper()
	p := get(t, c, f.url+"/console/login")
	if m := loginTokenRE.FindStringSubmatch(p.body); m != nil {
		return m[1]
	}
	return ""
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

func csrfOf(t *testing.T, p page) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil {
		t.Fatalf("page %d without a CSRF token: %.300s", p.status, p.body)
	}
	return m[1]
}

func TestSignIn(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := client(t)
	// A wrong key: the form again, 401, no session.
	for _, key := range []string{"", "nonsense", "ik_00000000_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", f.all + "x"} {
		p := post(t, c, f.url+"/console/login", url.Values{"key": {key}, "login_token": {loginToken(t, f, c)}})
		if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "not valid") || strings.Contains(p.body, "goroutine") {
			t.Fatalf("key %q: %d %.200s", key, p.status, p.body)
		}
	}
	if p := get(t, c, f.url+"/console/"); p.status != http.StatusSeeOther || p.location != "/console/login" {
		t.Fatalf("after wrong keys: %d to %q", p.status, p.location)
	}
	// The session cookie.
	res, err := c.PostForm(f.url+"/console/login", url.Values{"key": {f.all}, "login_token": {loginToken(t, f, c)}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var ck *http.Cookie
	for _, k := range res.Cookies() {
		if k.Name == console.CookieName {
			ck = k
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure || ck.Path != "/console/" || len(ck.Value) < 40 {
		t.Fatalf("session cookie %+v", ck)
	}
	// Only the hash of the id is stored.
	raw, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil || len(raw) != 32 {
		t.Fatalf("session id %q is not 256 bits of base64url", ck.Value)
	}
	var stored []byte
	if err := f.pool.QueryRow(t.Context(), `SELECT id_hash FROM console_sessions`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if want := sha256.Sum256(raw); !bytes.Equal(stored, want[:]) {
		t.Fatalf("stored %x, want SHA-256 of the id", stored)
	}
	if p := get(t, c, f.url+"/console/"); p.status != http.StatusOK || !strings.Contains(p.body, "CH1") {
		t.Fatalf("overview: %d", p.status)
	}
}

func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := client(t)
	signIn(t, f, c, f.all)
	// Used every 29 minutes, the session lives up to 12 hours.
	for elapsed := time.Duration(0); elapsed+29*time.Minute < console.AbsoluteTimeout; elapsed += 29 * time.Minute {
		f.clock.advance(29 * time.Minute)
		if p := get(t, c, f.url+"/console/verify"); p.status != http.StatusOK {
			t.Fatalf("after %s of use: %d to %q", elapsed+29*time.Minute, p.status, p.location)
		}
	}
	f.clock.set(start.Add(console.AbsoluteTimeout))
	if p := get(t, c, f.url+"/console/verify"); p.status != http.StatusSeeOther || p.location != "/console/login" {
		t.Fatalf("after 12 hours: %d to %q, want the sign-in page", p.status, p.location)
	}
	// Idle for 30 minutes, a fresh session ends.
	f.clock.set(start)
	c2 := client(t)
	signIn(t, f, c2, f.all)
	f.clock.advance(console.IdleTimeout - time.Second)
	if p := get(t, c2, f.url+"/console/"); p.status != http.StatusOK {
		t.Fatalf("idle 29:59: %d", p.status)
	}
	f.clock.advance(console.IdleTimeout + time.Second)
	if p := get(t, c2, f.url+"/console/"); p.status != http.StatusSeeOther {
		t.Fatalf("idle 30:01: %d, want a redirect to sign in", p.status)
	}
}

func TestCSRFAndScopes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := client(t)
	token := signIn(t, f, c, f.all)
	inv := f.invs[0]
	cancelURL := f.url + "/console/invoices/" + document.KeyOf(inv) + "/cancel"
	for _, form := range []url.Values{
		{"reason": {"forged"}},
		{"reason": {"forged"}, "csrf_token": {""}},
		{"reason": {"forged"}, "csrf_token": {token + "x"}},
		{"reason": {"forged"}, "csrf_token": {csrfOf(t, signInOther(t, f))}}, // another session's token
	} {
		if p := post(t, c, cancelURL, form); p.status != http.StatusForbidden {
			t.Fatalf("cancel with %v: %d", form, p.status)
		}
	}
	if p := post(t, c, f.url+"/console/logout", url.Values{}); p.status != http.StatusForbidden {
		t.Fatalf("logout without the token: %d", p.status)
	}
	if got, _ := invoice.Get(t.Context(), f.pool, f.seller.ID, inv.ID); got.Status != document.StatusIssued {
		t.Fatal("a forged POST cancelled the invoice")
	}
	// An empty reason is refused on the form; a good one cancels.
	if p := post(t, c, cancelURL, url.Values{"reason": {"  "}, "csrf_token": {token}}); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "reason") {
		t.Fatalf("empty reason: %d %.300s", p.status, p.body)
	}
	if p := post(t, c, cancelURL, url.Values{"reason": {"duplicate"}, "csrf_token": {token}}); p.status != http.StatusSeeOther {
		t.Fatalf("cancel: %d %.300s", p.status, p.body)
	}
	if p := post(t, c, cancelURL, url.Values{"reason": {"again"}, "csrf_token": {token}}); p.status != http.StatusConflict {
		t.Fatalf("cancel twice: %d", p.status)
	}

	// A read-only key reads but cannot cancel.
	r := client(t)
	rtoken := signIn(t, f, r, f.read)
	if p := get(t, r, f.url+"/console/series/CH1/2026-27"); p.status != http.StatusOK || strings.Contains(p.body, "Cancel…") {
		t.Fatalf("read-only series page: %d, cancel links shown: %v", p.status, strings.Contains(p.body, "Cancel…"))
	}
	other := f.invs[1]
	if p := post(t, r, f.url+"/console/invoices/"+document.KeyOf(other)+"/cancel", url.Values{"reason": {"x"}, "csrf_token": {rtoken}}); p.status != http.StatusForbidden {
		t.Fatalf("read-only cancel: %d", p.status)
	}
	// Unknown pages and other sellers' things are not found.
	for _, u := range []string{"/console/nope", "/console/series/NOPE/2026-27", "/console/series/CH1/2025-26", "/console/invoices/999999/cancel", "/console/invoices/CH1-2026-999/cancel", "/console/invoices/CH9-2026-1/cancel"} {
		if p := get(t, c, f.url+u); p.status != http.StatusNotFound {
			t.Fatalf("%s: %d", u, p.status)
		}
	}
}

func indentJSON(t *testing.T, b []byte) string {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// signInOther signs a second client in and returns its overview page.
func signInOther(t *testing.T, f *fixture) page {
	t.Helper()
	c := client(t)
	signIn(t, f, c, f.all)
	return get(t, c, f.url+"/console/")
}

func TestRevokedKeyEndsSessions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := client(t)
	signIn(t, f, c, f.read)
	if p := get(t, c, f.url+"/console/"); p.status != http.StatusOK {
		t.Fatalf("before revoking: %d", p.status)
	}
	if err := apikey.Revoke(t.Context(), f.pool, f.read); err != nil {
		t.Fatal(err)
	}
	if p := get(t, c, f.url+"/console/"); p.status != http.StatusSeeOther || p.location != "/console/login" {
		t.Fatalf("after revoking the key: %d to %q", p.status, p.location)
	}
	var n int
	if err := f.pool.QueryRow(t.Context(), `SELECT count(*) FROM console_sessions`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d sessions left (%v)", n, err)
	}
}

func TestDownloadsAndTable13(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dbtest.SetClock(t, f.pool, start) // October has ended by the database's clock too
	c := client(t)
	signIn(t, f, c, f.read)
	for format, ctype := range map[string]string{"csv": "text/csv; charset=utf-8", "json": "application/json",
		"xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"} {
		p := get(t, c, f.url+"/console/series/CH1/2026-27/audit?format="+format)
		if p.status != http.StatusOK || p.header.Get("Content-Type") != ctype ||
			p.header.Get("Content-Disposition") != `attachment; filename="CH1-2026-27-audit.`+format+`"` {
			t.Fatalf("%s download: %d %v", format, p.status, p.header)
		}
	}
	if p := get(t, c, f.url+"/console/series/CH1/2026-27/audit?format=csv&part=summary"); !strings.Contains(p.body, "Field,Value") {
		t.Fatalf("summary download: %.200s", p.body)
	}
	if p := get(t, c, f.url+"/console/series/CH1/2026-27/audit?format=pdf"); p.status != http.StatusUnprocessableEntity || p.header.Get("Content-Disposition") != "" {
		t.Fatalf("pdf download: %d %v", p.status, p.header)
	}
	p := get(t, c, f.url+"/console/gstr1.json?fp=112026")
	if p.status != http.StatusOK || strings.TrimSpace(p.body) != strings.TrimSpace(indentJSON(t, apiGet(t, f, "/v1/reports/gstr1/doc-issue?fp=112026"))) {
		t.Fatalf("Table 13 JSON from the console:\n%s\nfrom the API:\n%s", p.body, apiGet(t, f, "/v1/reports/gstr1/doc-issue?fp=112026"))
	}
	if p := get(t, c, f.url+"/console/gstr1?fp=132026"); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "notice error") {
		t.Fatalf("bad period: %d", p.status)
	}
	// Locked months show on the GSTR-1 page and in the audit summary.
	oct, _ := document.ParseMonth("102026")
	if _, _, err := invoice.LockPeriod(t.Context(), f.pool, f.seller, oct, "cli", start); err != nil {
		t.Fatal(err)
	}
	if p := get(t, c, f.url+"/console/gstr1"); !strings.Contains(p.body, "<strong>Oct 2026</strong>, locked 29 Nov 2026, 10:00 IST by an administrator on the server") {
		t.Fatalf("GSTR-1 page lacks the lock: %s", p.body)
	}
	if p := get(t, c, f.url+"/console/series/CH1/2026-27"); !strings.Contains(p.body, "<dt>Locked months (GSTR-1 filed)</dt><dd>Oct 2026</dd>") {
		t.Fatalf("series page lacks the lock")
	}
	// A series moved here mid-year shows its declared serials.
	ctx := t.Context()
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mv, err := series.CreateSeriesTx(ctx, tx, series.NewSeries{SellerID: f.seller.ID, Code: "MV", DocType: "invoice", Format: "MV/{FY}/{SEQ:5}"})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := time.Parse(time.DateOnly, "2026-11-15")
	if _, err := invoice.DeclareOpeningTx(ctx, tx, f.seller, mv, invoice.Opening{FY: 2026, LastSerial: 1233, LastInvoiceDate: d, LastNumber: "MV/26-27/01233"}, "cli", start); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if p := get(t, c, f.url+"/console/series/MV/2026-27/check"); p.status != http.StatusOK || !strings.Contains(p.body, `serials 1 to 1233, last <span class="nowrap">MV/26-27/01233</span> dated 15 Nov 2026; declared 29 Nov 2026, 10:00 IST by an administrator on the server`) {
		t.Fatalf("series page lacks the opening: %d %.2000s", p.status, p.body)
	}
	if p := get(t, c, f.url+"/console/gstr1?fp=112026"); !strings.Contains(p.body, "series MV 2026-27: serials 1 to 1233") {
		t.Fatalf("GSTR-1 page lacks the declared note")
	}
	// Paging: 100 rows a page, found by number.
	if p := get(t, c, f.url+"/console/series/CH1/2026-27?number=ch1/26-27/00003"); strings.Count(p.body, "<tr class=\"issued\"") != 1 || !strings.Contains(p.body, "CH1/26-27/00003") {
		t.Fatalf("find by number: %.500s", p.body)
	}
	if p := get(t, c, f.url+"/console/series/CH1/2026-27?after=3"); strings.Count(p.body, "data-number=") != 2 {
		t.Fatalf("after 3: %d rows", strings.Count(p.body, "data-number="))
	}
}

// TestOversizedFormIsCut: a form body past the console's cap is not read
// in whole; the sign-in is refused (403: its token is in the part never
// read), never 5xx.
func TestOversizedFormIsCut(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := client(t)
	p := post(t, c, f.url+"/console/login", url.Values{"key": {f.all}, "login_token": {loginToken(t, f, c)}, "pad": {strings.Repeat("x", 1<<20)}})
	if p.status != http.StatusForbidden {
		t.Fatalf("a 1 MiB sign-in form: %d %.200s, want 403", p.status, p.body)
	}
	// The same form without the padding signs in.
	signIn(t, f, c, f.all)
}

// TestSeriesKeyCannotSignIn: the console shows every series of the
// seller, so a key restricted to some series (a terminal's) is refused.
func TestSeriesKeyCannotSignIn(t *testing.T) {
	t.Parallel()
	f := setup(t)
	key, err := apikey.CreateForSeries(t.Context(), f.pool, f.seller.ID, []string{apikey.ScopeRead}, []string{"CH1"})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t)
	p := post(t, c, f.url+"/console/login", url.Values{"key": {key}, "login_token": {loginToken(t, f, c)}})
	if p.status != http.StatusForbidden || !strings.Contains(p.body, "restricted to series CH1") {
		t.Fatalf("a series key signing in: %d %.300s", p.status, p.body)
	}
	if p := get(t, c, f.url+"/console/"); p.status != http.StatusSeeOther {
		t.Fatalf("after a refused sign-in the overview answered %d", p.status)
	}
}
