package console_test

import (
	"bytes"
	"context"
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
	"github.com/invoiced/invoiced/invoice"
)

// TestConsoleInBrowser walks the accountant's flow in headless Chromium:
// sign in, read the overview, open a series-year, download its CSV and
// read its rows, cancel an invoice with a reason and a confirmation and
// see it in the audit, compare Table 13 with the API, verify, be refused a
// POST without the CSRF token, and lose access after signing out. It saves
// a screenshot of each page.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := browser(t)
	dir := screenshotDir(t)
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	location := func() string {
		t.Helper()
		u, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		return u
	}

	// Signed out, the console sends the browser to the sign-in form.
	do("open the console", chromedp.Navigate(f.url+"/console/"), chromedp.WaitVisible(chromedp.CSS("#key")))
	if !strings.HasSuffix(location(), "/console/login") {
		t.Fatalf("signed out, /console/ shows %s", location())
	}
	shoot(t, ctx, dir, "console-login")

	// A wrong key shows the form again with an error.
	do("wrong key", chromedp.SendKeys(chromedp.CSS("#key"), "ik_00000000_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
		chromedp.Submit(chromedp.CSS("#key")), chromedp.WaitVisible(chromedp.CSS(".notice.error")))
	if got := text(".notice.error"); !strings.Contains(got, "not valid") {
		t.Fatalf("wrong key shows %q", got)
	}

	// Sign in: the overview lists CH1 with its last number.
	do("sign in", chromedp.SetValue(chromedp.CSS("#key"), f.all), chromedp.Submit(chromedp.CSS("#key")),
		chromedp.WaitVisible(chromedp.CSS("#series")))
	over := text("#series")
	for _, want := range []string{"CH1", "invoice", "2026-27: CH1/26-27/00005", "Check now"} {
		if !strings.Contains(over, want) {
			t.Fatalf("overview lacks %q:\n%s", want, over)
		}
	}
	shoot(t, ctx, dir, "console-overview")

	// The series-year: summary, rows and chart.
	do("open CH1 2026-27", chromedp.Click(chromedp.CSS(`a[href="/console/series/CH1/2026-27"]`)), chromedp.WaitVisible(chromedp.CSS("#rows")))
	if s := text("#summary"); !strings.Contains(s, "CH1/26-27/00001 – CH1/26-27/00005") {
		t.Fatalf("head:\n%s", s)
	}
	// The whole year is checked on request, not on every view.
	do("check the year", chromedp.Click(chromedp.CSS("#check")), chromedp.WaitVisible(chromedp.CSS("#rows")))
	if s := text("#summary"); !strings.Contains(s, "Intact") || !strings.Contains(s, "CH1/26-27/00001 – CH1/26-27/00005") {
		t.Fatalf("summary:\n%s", s)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#rows tbody tr").length`)); err != nil || n != 5 {
		t.Fatalf("%d rows (%v), want 5", n, err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg.chart rect.bar").length`)); err != nil || n != 4 {
		t.Fatalf("chart has %d bars (%v), want 4 days", n, err)
	}
	shoot(t, ctx, dir, "console-series-year")

	// The CSV download, fetched with the session's cookie, is the audit's rows.
	body, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`fetch(document.querySelector("#dl-csv").href).then(r => r.ok ? r.text() : Promise.reject(r.status))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("download CSV: %v", err)
	}
	recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(body, "\uFEFF"))).ReadAll()
	if err != nil || len(recs) != 6 || recs[0][0] != "Serial" || recs[5][1] != "CH1/26-27/00005" {
		t.Fatalf("CSV (%v): %q", err, recs)
	}

	// Cancel serial 2 from its row: a confirmation with a reason, then the
	// row shows it cancelled.
	target := f.invs[1]
	do("open the cancel form", chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-number=%q] a.cancel`, target.Number))),
		chromedp.WaitVisible(chromedp.CSS("#reason")))
	if h := text("h1"); h != "Cancel "+target.Number+"?" {
		t.Fatalf("confirmation heading %q", h)
	}
	shoot(t, ctx, dir, "console-cancel")
	do("confirm", chromedp.SendKeys(chromedp.CSS("#reason"), "Wrong buyer on the bill"),
		chromedp.Click(chromedp.CSS("#confirm-cancel")), chromedp.WaitVisible(chromedp.CSS(".notice.ok")))
	if row := text(fmt.Sprintf(`tr[data-number=%q]`, target.Number)); !strings.Contains(row, "cancelled") || !strings.Contains(row, "Wrong buyer on the bill") {
		t.Fatalf("row after cancelling: %q", row)
	}
	got, err := invoice.Get(context.Background(), f.pool, f.seller.ID, target.ID)
	if err != nil || got.Status != invoice.StatusCancelled || got.CancelReason != "Wrong buyer on the bill" {
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
	shoot(t, ctx, dir, "console-series-year-cancelled")

	// Table 13 for November 2026 is what the API answers.
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
	if fmt.Sprint(cells) != fmt.Sprint(want) || len(want) != 1 || want[0][5] != "1" {
		t.Fatalf("Table 13 in the console %q, from the API %q", cells, want)
	}
	shoot(t, ctx, dir, "console-gstr1")

	// Verify.
	do("verify", chromedp.Navigate(f.url+"/console/verify"), chromedp.WaitVisible(chromedp.CSS("#verdict")))
	if v := text("#verdict"); !strings.Contains(v, "Every series-year is intact") {
		t.Fatalf("verify: %q", v)
	}
	shoot(t, ctx, dir, "console-verify")

	// The overview on a phone.
	do("phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(f.url+"/console/"), chromedp.WaitVisible(chromedp.CSS("#series")))
	shoot(t, ctx, dir, "console-overview-phone")
	do("desktop", chromedp.EmulateViewport(1280, 900))

	// A POST without the CSRF token is refused and changes nothing.
	other := f.invs[2]
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(
		`fetch("/console/invoices/%s/cancel", {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "reason=forged"}).then(r => r.status)`,
		invoice.KeyOf(other)), chromedp.EvalAwaitPromise))
	if err != nil || status != http.StatusForbidden {
		t.Fatalf("POST without csrf_token: %d, %v; want 403", status, err)
	}
	if inv, _ := invoice.Get(context.Background(), f.pool, f.seller.ID, other.ID); inv.Status != invoice.StatusIssued {
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
