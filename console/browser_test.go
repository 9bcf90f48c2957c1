package console_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/invoiced/invoiced/console"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/browsertest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/lease"
)

// TestConsoleInBrowser walks the accountant's whole job in headless
// Chromium, as one flow: sign in (after a wrong key), read the overview,
// find an invoice by number from the top bar, open a series-year and
// check it, download its CSV and read its rows, cancel an invoice with a
// reason and a confirmation and see it in the audit, open a row's
// receipt, compare Table 13 with the API and lock the month once it has
// ended, end a lost device's lease by force, see the audit's finding and
// settle the lease, verify, be refused a POST without the CSRF token, and
// lose access after signing out. It saves a screenshot of each page (make
// console-screenshots writes them to docs/img).
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	f := setup(t)
	bg := t.Context()
	// A second series, T07, numbered online twice and then leased to the
	// till on platform 2.
	t07 := testfactory.Series(t, f.pool, f.seller, &testfactory.SeriesOpts{Code: "T07", Format: "T07/{FY}/{SEQ:5}", Shop: "Platform 2 till"})
	issueIn(t, f, t07, "2026-11-25")
	issueIn(t, f, t07, "2026-11-26")
	prefix := strings.Split(f.all, "_")[1]
	held, err := lease.TakeLease(bg, f.pool, t07, "till-2", "key ik_"+prefix, start)
	if err != nil {
		t.Fatal(err)
	}
	// The accountant works late on 30 November, and locks November just
	// after midnight, within the session's idle limit.
	f.clock.set(time.Date(2026, 11, 30, 23, 45, 0, 0, gst.IST))
	ctx := browsertest.Start(t)
	dir := browsertest.ScreenshotDir(t)
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		browsertest.Do(t, ctx, what, steps...)
	}
	text := func(sel string) string {
		t.Helper()
		return browsertest.Text(t, ctx, sel)
	}
	location := func() string {
		t.Helper()
		u, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	wantText := func(sel string, wants ...string) {
		t.Helper()
		got := text(sel)
		for _, w := range wants {
			if !strings.Contains(got, w) {
				t.Fatalf("%s lacks %q:\n%s", sel, w, got)
			}
		}
	}

	// Signed out, the console sends the browser to the sign-in form.
	do("open the console", chromedp.Navigate(f.url+"/console/"), chromedp.WaitVisible(chromedp.CSS("#key")))
	if !strings.HasSuffix(location(), "/console/login") {
		t.Fatalf("signed out, /console/ shows %s", location())
	}
	browsertest.Shoot(t, ctx, dir, "console-login")

	// A wrong key shows the form again with an error.
	do("wrong key", chromedp.SendKeys(chromedp.CSS("#key"), "ik_00000000_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
		chromedp.Submit(chromedp.CSS("#key")), chromedp.WaitVisible(chromedp.CSS(".notice.error")))
	if got := text(".notice.error"); !strings.Contains(got, "not valid") {
		t.Fatalf("wrong key shows %q", got)
	}

	// Sign in: the overview lists CH1 with its last number and what its
	// numbers look like.
	do("sign in", chromedp.SetValue(chromedp.CSS("#key"), f.all), chromedp.Submit(chromedp.CSS("#key")),
		chromedp.WaitVisible(chromedp.CSS("#series")))
	wantText("#series", "CH1", "invoice", "2026-27: CH1/26-27/00005", "T07/26-27/00001", "Check now")
	browsertest.Shoot(t, ctx, dir, "console-overview")

	// The top bar finds a number in any series and year: its row.
	do("find a number", chromedp.SendKeys(chromedp.CSS("form.search input"), "ch1/26-27/00003"),
		chromedp.Submit(chromedp.CSS("form.search input")), chromedp.WaitVisible(chromedp.CSS(`tr[data-number="CH1/26-27/00003"]`)))
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#rows tbody tr").length`)); err != nil || n != 1 {
		t.Fatalf("the search shows %d rows (%v), want its 1", n, err)
	}
	browsertest.Shoot(t, ctx, dir, "console-find")

	// The series-year: summary, rows and chart.
	do("open CH1 2026-27", chromedp.Navigate(f.url+"/console/"), chromedp.WaitVisible(chromedp.CSS("#series")),
		chromedp.Click(chromedp.CSS(`a[href="/console/series/CH1/2026-27"]`)), chromedp.WaitVisible(chromedp.CSS("#rows")))
	wantText("#summary", "CH1/26-27/00001 – CH1/26-27/00005")
	// The whole year is checked on request, not on every view.
	do("check the year", chromedp.Click(chromedp.CSS("#check")), chromedp.WaitVisible(chromedp.CSS("#rows")))
	wantText("#summary", "Intact", "CH1/26-27/00001 – CH1/26-27/00005")
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#rows tbody tr").length`)); err != nil || n != 5 {
		t.Fatalf("%d rows (%v), want 5", n, err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg.chart rect.bar").length`)); err != nil || n != 4 {
		t.Fatalf("chart has %d bars (%v), want 4 days", n, err)
	}
	browsertest.Shoot(t, ctx, dir, "console-series-year")

	// Downloads, fetched with the session's cookie: the CSV is the audit's
	// rows, the workbook is one.
	body, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`fetch(document.querySelector("#dl-csv").href).then(r => r.ok ? r.text() : Promise.reject(r.status))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("download CSV: %v", err)
	}
	recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(body, "\uFEFF"))).ReadAll()
	if err != nil || len(recs) != 6 || recs[0][0] != "Serial" || recs[5][1] != "CH1/26-27/00005" {
		t.Fatalf("CSV (%v): %q", err, recs)
	}
	ctype, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`fetch(document.querySelector('a[href$="format=xlsx"]').href).then(r => r.ok ? r.headers.get("Content-Type") : Promise.reject(r.status))`, chromedp.EvalAwaitPromise))
	if err != nil || !strings.Contains(ctype, "spreadsheetml") {
		t.Fatalf("download XLSX: %q, %v", ctype, err)
	}

	// Cancel serial 2 from its row: a confirmation with a reason, then the
	// row shows it cancelled.
	target := f.invs[1]
	do("open the cancel form", chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-number=%q] a.cancel`, target.Number))),
		chromedp.WaitVisible(chromedp.CSS("#reason")))
	if h := text("h1"); h != "Cancel "+target.Number+"?" {
		t.Fatalf("confirmation heading %q", h)
	}
	browsertest.Shoot(t, ctx, dir, "console-cancel")
	do("confirm", chromedp.SendKeys(chromedp.CSS("#reason"), "Wrong buyer on the bill"),
		chromedp.Click(chromedp.CSS("#confirm-cancel")), chromedp.WaitVisible(chromedp.CSS(".notice.ok")))
	if row := text(fmt.Sprintf(`tr[data-number=%q]`, target.Number)); !strings.Contains(row, "cancelled") || !strings.Contains(row, "Wrong buyer on the bill") {
		t.Fatalf("row after cancelling: %q", row)
	}
	got, err := invoice.Get(bg, f.pool, f.seller.ID, target.ID)
	if err != nil || got.Status != document.StatusCancelled || got.CancelReason != "Wrong buyer on the bill" {
		t.Fatalf("invoice after cancelling: %+v, %v", got, err)
	}
	do("check the year again", chromedp.Navigate(f.url+"/console/series/CH1/2026-27/check"), chromedp.WaitVisible(chromedp.CSS("#rows")))
	cancelled, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`[...document.querySelectorAll("#summary dt")].find(dt => dt.textContent == "Cancelled").nextElementSibling.textContent`))
	if err != nil || cancelled != "1" {
		t.Fatalf("the audit summary counts %q cancelled (%v), want 1", cancelled, err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#rows tr.cancelled").length`)); err != nil || n != 1 {
		t.Fatalf("%d cancelled rows (%v), want 1", n, err)
	}
	browsertest.Shoot(t, ctx, dir, "console-series-year-cancelled")

	// A row's receipt.
	first := f.invs[0]
	do("open a receipt", chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-number=%q] a.receipt`, first.Number))),
		chromedp.WaitVisible(chromedp.CSS("body")))
	if !strings.HasSuffix(location(), "/r/"+first.PublicID) {
		t.Fatalf("the receipt link opened %s", location())
	}
	wantText("body", first.Number, "Authorised signatory")

	// GSTR-1 Table 13 for November 2026 is what the API answers.
	do("Table 13", chromedp.Navigate(f.url+"/console/gstr1?fp=112026"), chromedp.WaitVisible(chromedp.CSS("#table13")))
	cells, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](
		`[...document.querySelectorAll("#table13 tbody tr")].map(tr => [...tr.cells].map(td => td.textContent.trim()))`))
	if err != nil {
		t.Fatal(err)
	}
	raw := apiGet(t, f, "/v1/reports/gstr1/doc-issue?fp=112026")
	var want [][]string
	var generic struct {
		DocIssue struct {
			DocDet []struct {
				Docs []map[string]any `json:"docs"`
			} `json:"doc_det"`
		} `json:"doc_issue"`
	}
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	for _, d := range generic.DocIssue.DocDet {
		for _, doc := range d.Docs {
			want = append(want, []string{fmt.Sprint(doc["num"]), "Invoices for outward supply", fmt.Sprint(doc["from"]), fmt.Sprint(doc["to"]),
				fmt.Sprint(doc["totnum"]), fmt.Sprint(doc["cancel"]), fmt.Sprint(doc["net_issue"])})
		}
	}
	if fmt.Sprint(cells) != fmt.Sprint(want) || len(want) != 2 || want[0][5] != "1" {
		t.Fatalf("Table 13 in the console %q, from the API %q", cells, want)
	}
	// November has not ended on the 30th: nothing to lock yet.
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('a[data-fp]').length`)); err != nil || n != 0 {
		t.Fatalf("%d months offered for locking on 30 Nov (%v), want 0", n, err)
	}

	// On 1 December, once November's GSTR-1 is filed: lock November.
	f.clock.set(time.Date(2026, 12, 1, 0, 5, 0, 0, gst.IST))
	do("GSTR-1 in December", chromedp.Navigate(f.url+"/console/gstr1?fp=112026"), chromedp.WaitVisible(chromedp.CSS("#table13")),
		chromedp.Click(chromedp.CSS(`a[data-fp="112026"]`)), chromedp.WaitVisible(chromedp.CSS("#confirm-lock")))
	wantText("main", "Lock Nov 2026?", "7 documents are dated in Nov 2026, 1 of them cancelled")
	do("tick filed", chromedp.Click(chromedp.CSS("#filed")))
	browsertest.Shoot(t, ctx, dir, "console-lock")
	do("lock", chromedp.Click(chromedp.CSS("#confirm-lock")), chromedp.WaitVisible(chromedp.CSS("#locked")))
	wantText("#locks", "Nov 2026, locked 1 Dec 2026, 00:05 IST by API key ik_"+prefix+" in the console")
	locks, err := invoice.PeriodLocks(bg, f.pool, f.seller.ID)
	if err != nil || len(locks) != 1 || locks[0].Month.FP() != "112026" {
		t.Fatalf("locks after the console's lock: %+v, %v", locks, err)
	}
	browsertest.Shoot(t, ctx, dir, "console-gstr1")

	// Offline devices: T07 is with till-2; it is lost, so end its lease by
	// force, see the audit's finding, and settle it from the paper roll.
	do("offline devices", chromedp.Click(chromedp.CSS(`nav a[href="/console/leases"]`)), chromedp.WaitVisible(chromedp.CSS(`#holding tr[data-series="T07"]`)))
	wantText(`#holding tr[data-series="T07"]`, "till-2", "29 Nov 2026, 10:00 IST", "from T07/26-27/00003", "2026-27: up to T07/26-27/00002", "numbering offline")
	do("end by force", chromedp.Click(chromedp.CSS("#end-T07")), chromedp.WaitVisible(chromedp.CSS("#reason")),
		chromedp.SendKeys(chromedp.CSS("#reason"), "Till stolen from platform 2"),
		chromedp.Click(chromedp.CSS("#confirm-end")), chromedp.WaitVisible(chromedp.CSS("#lease-notice")))
	wantText(`#holding tr[data-series="T07"]`, "ended by force, not settled", "Till stolen from platform 2", "anything after T07/26-27/00002 may have been printed")
	browsertest.Shoot(t, ctx, dir, "console-leases")
	do("the audit's finding", chromedp.Click(chromedp.CSS(`#holding a[href="/console/series/T07/2026-27/check"]`)), chromedp.WaitVisible(chromedp.CSS("#summary")))
	wantText("#summary", "NOT intact: 1 finding", "Offline device's invoices not uploaded", "from 3 on")
	do("settle", chromedp.Navigate(f.url+"/console/leases"), chromedp.WaitVisible(chromedp.CSS("#settle-T07")),
		chromedp.Click(chromedp.CSS("#settle-T07")), chromedp.WaitVisible(chromedp.CSS("#confirm-settle")),
		chromedp.SetValue(chromedp.CSS("#through-2026-27"), "4"),
		chromedp.SendKeys(chromedp.CSS("#reason"), "Its paper roll ends at T07/26-27/00004"))
	browsertest.Shoot(t, ctx, dir, "console-lease-settle")
	do("confirm the settlement", chromedp.Click(chromedp.CSS("#confirm-settle")), chromedp.WaitVisible(chromedp.CSS("#lease-notice")))
	wantText("#past", "T07", "till-2", "Its paper roll ends at T07/26-27/00004", "2026-27 up to T07/26-27/00004 counted as printed")
	if l, err := lease.GetLease(bg, f.pool, t07, held.ID); err != nil || l.SettledAt == nil || l.DeclaredYears[2026] != 4 {
		t.Fatalf("lease after settling: %+v, %v", l, err)
	}

	// Verify: both are intact; T07 lists the numbers declared spent with
	// the device, not as missing ones.
	do("verify", chromedp.Navigate(f.url+"/console/verify"), chromedp.WaitVisible(chromedp.CSS("#verdict")))
	wantText("#verdict", "Every series-year is intact")
	wantText("#chains", "CH1", "✓ intact", "T07", "with serials T07/26-27/00003 to T07/26-27/00004 declared spent (2)")
	browsertest.Shoot(t, ctx, dir, "console-verify")

	// The overview on a phone.
	do("phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(f.url+"/console/"), chromedp.WaitVisible(chromedp.CSS("#series")))
	browsertest.Shoot(t, ctx, dir, "console-overview-phone")
	do("desktop", chromedp.EmulateViewport(1280, 900))

	// A POST without the CSRF token is refused and changes nothing.
	other := f.invs[2]
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(
		`fetch("/console/invoices/%s/cancel", {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "reason=forged"}).then(r => r.status)`,
		document.KeyOf(other)), chromedp.EvalAwaitPromise))
	if err != nil || status != http.StatusForbidden {
		t.Fatalf("POST without csrf_token: %d, %v; want 403", status, err)
	}
	if inv, _ := invoice.Get(bg, f.pool, f.seller.ID, other.ID); inv.Status != document.StatusIssued {
		t.Fatalf("a POST without the token cancelled %s", inv.Number)
	}

	// Sign out: the session ends, in the browser and for its cookie.
	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{f.url + "/console/"}})
	if err != nil {
		t.Fatal(err)
	}
	var session string
	for _, c := range cookies.Cookies {
		if c.Name == console.CookieName {
			session = c.Value
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict {
				t.Fatalf("session cookie %+v is not HttpOnly and SameSite=Strict", c)
			}
		}
	}
	if session == "" {
		t.Fatal("no session cookie")
	}
	do("sign out", chromedp.Navigate(f.url+"/console/"), chromedp.WaitVisible(chromedp.CSS("#series")),
		chromedp.Click(chromedp.CSS(".who button")), chromedp.WaitVisible(chromedp.CSS("#key")))
	do("after sign-out", chromedp.Navigate(f.url+"/console/verify"), chromedp.WaitVisible(chromedp.CSS("#key")))
	req, _ := http.NewRequest("GET", f.url+"/console/", nil)
	req.AddCookie(&http.Cookie{Name: console.CookieName, Value: session})
	res, err := client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/login" {
		t.Fatalf("the old cookie after sign-out: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
}

// apiGet returns the body of GET path on the API with the all-scopes key.
func apiGet(t *testing.T, f *fixture, path string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", f.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+f.all)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
	}
	return bytes.TrimSpace(b)
}
