package console_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
)

// startSession signs c in with key and fails unless the console answers
// with the redirect to the overview (whatever the overview then allows).
func startSession(t *testing.T, f *fixture, c *http.Client, key string) {
	t.Helper()
	p := post(t, c, f.url+"/console/login", url.Values{"key": {key}, "login_token": {loginToken(t, f, c)}})
	if p.status != http.StatusSeeOther || p.location != "/console/" {
		t.Fatalf("sign in: %d to %q: %.300s", p.status, p.location, p.body)
	}
}

// issueTo issues one invoice in f's CH1 to a buyer with a GSTIN (and
// the address Rule 46(d) asks for, in Bengaluru) and returns it.
func issueTo(t *testing.T, f *fixture, name, gstin string) document.Invoice {
	t.Helper()
	d, _ := time.Parse(time.DateOnly, "2026-11-28")
	req := document.Request{InvoiceDate: d, Buyer: &document.Buyer{Name: name, GSTIN: gstin, Address: testfactory.BuyerAddress()}, Items: []document.ItemInput{
		{Description: "Assam tea, 1 kg", HSN: "0902", Quantity: "3", UnitPrice: "410.25", GSTRate: "5"}}}
	draft, err := document.Prepare(req, f.seller, f.ch1, start, document.Policy{BackdateDays: 60})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := invoice.Issue(t.Context(), f.pool, f.seller, f.ch1, draft, start, series.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// A console session never shows more than its key's scopes allow, page by
// page: an issue-only key signs in but reads nothing, and its cancel
// confirmation names the number alone (no date, total or buyer).
func TestConsoleSessionKeepsKeyScopes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	buyer := issueTo(t, f, "Ravi Traders Kolkata", "29AAGCB7383J1Z4")
	issueOnly, err := apikey.Create(ctx, f.pool, f.seller.ID, []string{apikey.ScopeIssue})
	if err != nil {
		t.Fatal(err)
	}
	manageOnly, err := apikey.Create(ctx, f.pool, f.seller.ID, []string{apikey.ScopeManage})
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{"Ravi Traders Kolkata", "29AAGCB7383J1Z4", "Bengaluru", "Asha Stores", document.Money(buyer.Totals.Total), "28 Nov 2026", "2026-11-28"}
	leaks := func(body string) string {
		for _, s := range secrets {
			if strings.Contains(body, s) {
				return s
			}
		}
		return ""
	}
	reads := []string{"/console/", "/console/series/CH1/2026-27", "/console/series/CH1/2026-27?number=" + url.QueryEscape(buyer.Number),
		"/console/series/CH1/2026-27/audit?format=csv", "/console/series/CH1/2026-27/audit?format=json&part=summary",
		"/console/gstr1?fp=112026", "/console/gstr1.json?fp=112026", "/console/verify",
		"/console/find?number=" + url.QueryEscape(buyer.Number), "/console/leases"}
	for _, key := range []string{issueOnly, manageOnly} {
		c := client(t)
		startSession(t, f, c, key)
		for _, u := range reads {
			p := get(t, c, f.url+u)
			if p.status != http.StatusForbidden {
				t.Errorf("key without read: %s answered %d, want 403", u, p.status)
			}
			if s := leaks(p.body); s != "" {
				t.Errorf("key without read: %s shows %q", u, s)
			}
		}
	}
	// The issue-only key may cancel: the confirmation names the number only.
	c := client(t)
	startSession(t, f, c, issueOnly)
	p := get(t, c, f.url+"/console/invoices/"+document.KeyOf(buyer)+"/cancel")
	if p.status != http.StatusOK || !strings.Contains(p.body, buyer.Number) {
		t.Fatalf("issue-only cancel form: %d %.300s", p.status, p.body)
	}
	if s := leaks(p.body); s != "" {
		t.Errorf("the cancel confirmation shows %q to a key without read", s)
	}
	// A key with read sees what it is cancelling.
	a := client(t)
	startSession(t, f, a, f.all)
	p = get(t, a, f.url+"/console/invoices/"+document.KeyOf(buyer)+"/cancel")
	if p.status != http.StatusOK || !strings.Contains(p.body, "Ravi Traders Kolkata") || !strings.Contains(p.body, "29AAGCB7383J1Z4") || !strings.Contains(p.body, "of Bengaluru, 29-Karnataka") {
		t.Fatalf("cancel form for a key with read: %d %.300s", p.status, p.body)
	}
	// The series page names the buyer's city and state.
	if p = get(t, a, f.url+"/console/series/CH1/2026-27"); p.status != http.StatusOK || !strings.Contains(p.body, `<span class="muted">Bengaluru, 29-Karnataka</span>`) {
		t.Fatalf("series page for a key with read: %d, without the buyer's city and state", p.status)
	}
}

// Console invoice ids are the API's (CH1-2026-7); the database's numeric
// ids are not accepted, and one seller's key finds its own invoice under
// an id or nothing.
func TestConsoleInvoiceIDsAreTheAPIs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	c := client(t)
	token := signIn(t, f, c, f.all)
	inv := f.invs[0]
	if p := get(t, c, f.url+"/console/invoices/"+strconv.FormatInt(inv.ID, 10)+"/cancel"); p.status != http.StatusNotFound {
		t.Errorf("numeric id: %d, want 404", p.status)
	}
	if p := post(t, c, f.url+"/console/invoices/"+strconv.FormatInt(inv.ID, 10)+"/cancel", url.Values{"reason": {"x"}, "csrf_token": {token}}); p.status != http.StatusNotFound {
		t.Errorf("POST to a numeric id: %d, want 404", p.status)
	}
	if got, _ := invoice.Get(ctx, f.pool, f.seller.ID, inv.ID); got.Status != document.StatusIssued {
		t.Fatal("a numeric id cancelled the invoice")
	}
	key := document.KeyOf(inv) // CH1-2026-1
	if key != "CH1-2026-1" {
		t.Fatalf("key %q", key)
	}
	if p := get(t, c, f.url+"/console/invoices/"+key+"/cancel"); p.status != http.StatusOK || !strings.Contains(p.body, inv.Number) {
		t.Fatalf("%s: %d %.300s", key, p.status, p.body)
	}
	// The series-year links each row by its key, and to its receipt.
	p := get(t, c, f.url+"/console/series/CH1/2026-27")
	for _, in := range f.invs {
		if !strings.Contains(p.body, `href="/console/invoices/`+document.KeyOf(in)+`/cancel"`) {
			t.Errorf("no cancel link by key for %s", in.Number)
		}
		if in.PublicID == "" || !strings.Contains(p.body, `href="/r/`+in.PublicID+`"`) {
			t.Errorf("no receipt link for %s (public id %q)", in.Number, in.PublicID)
		}
	}
	if strings.Contains(p.body, `/console/invoices/`+strconv.FormatInt(inv.ID, 10)+`/cancel`) {
		t.Error("the page still links a numeric id")
	}

	// Another seller with its own CH1: its key finds its own CH1-2026-1,
	// and neither the first seller's numeric id nor anything else of it.
	other := testfactory.Seller(t, f.pool, &testfactory.SellerOpts{GSTIN: "29AABCR1718E1ZL", Name: "Bengaluru Beans"})
	testfactory.Series(t, f.pool, other, &testfactory.SeriesOpts{Code: "CH1", Format: "B/{FY}/{SEQ:5}"})
	otherKey, err := apikey.Create(ctx, f.pool, other.ID, []string{apikey.ScopeIssue, apikey.ScopeRead})
	if err != nil {
		t.Fatal(err)
	}
	o := client(t)
	startSession(t, f, o, otherKey)
	for _, u := range []string{"/console/invoices/" + key + "/cancel", "/console/invoices/" + strconv.FormatInt(inv.ID, 10) + "/cancel"} {
		if p := get(t, o, f.url+u); p.status != http.StatusNotFound || strings.Contains(p.body, inv.Number) {
			t.Errorf("another seller's %s: %d %.200s", u, p.status, p.body)
		}
	}
}

// Login CSRF: a cross-site form that posts the attacker's key must not
// sign the victim's browser in. The sign-in form carries a token bound to
// a cookie of the form, and a POST from another origin is refused.
func TestSignInNeedsTheFormsToken(t *testing.T) {
	t.Parallel()
	f := setup(t)
	sessions := func() int {
		var n int
		if err := f.pool.QueryRow(t.Context(), `SELECT count(*) FROM console_sessions`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A victim who never opened the form: the attacker's page posts the key.
	v := client(t)
	if p := post(t, v, f.url+"/console/login", url.Values{"key": {f.all}}); p.status != http.StatusForbidden {
		t.Errorf("sign-in without the form's token: %d, want 403", p.status)
	}
	// The victim opened the form once (has its cookie), the attacker cannot
	// read the token, and guesses.
	loginToken(t, f, v)
	if p := post(t, v, f.url+"/console/login", url.Values{"key": {f.all}, "login_token": {"guess"}}); p.status != http.StatusForbidden {
		t.Errorf("sign-in with a wrong token: %d, want 403", p.status)
	}
	// Another origin is refused even with the right token.
	tok := loginToken(t, f, v)
	req, err := http.NewRequest(http.MethodPost, f.url+"/console/login", strings.NewReader(url.Values{"key": {f.all}, "login_token": {tok}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://attacker.example")
	res, err := v.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("sign-in from another origin: %d, want 403", res.StatusCode)
	}
	if n := sessions(); n != 0 {
		t.Fatalf("%d sessions were started by cross-site posts", n)
	}
	// The form itself signs in.
	startSession(t, f, v, f.all)
	if n := sessions(); n != 1 {
		t.Fatalf("%d sessions after signing in through the form", n)
	}
}

// The console's routes pass through the same text guard as the API's:
// a path wildcard, query value or header that is not UTF-8 text without
// NUL bytes is a 400 naming it before any page reads the database, signed
// in or not.
func TestConsoleRefusesBadBytesOutsideBodies(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := client(t)
	startSession(t, f, c, f.all)
	for _, tc := range []struct{ name, path, want string }{
		{"series code not UTF-8", "/console/series/CH%FF/2026", "path parameter code "},
		{"year with a NUL", "/console/series/CH1/20%0026", "path parameter fy "},
		{"invoice id not UTF-8", "/console/invoices/CH1-2026-%FF/cancel", "path parameter id "},
		{"query value not UTF-8", "/console/series/CH1/2026?number=%FF", "query parameter number "},
		{"sign-in query with a NUL", "/console/login?next=%00", "query parameter next "},
	} {
		p := get(t, c, f.url+tc.path)
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, tc.want) {
			t.Errorf("%s: GET %s: %d %.200s, want 400 naming %q", tc.name, tc.path, p.status, p.body, tc.want)
		}
	}
}
