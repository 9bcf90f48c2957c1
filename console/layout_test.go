package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/browsertest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/lease"
)

// TestConsolePagesFitTheScreen opens every page of the console in headless
// Chromium on a phone (390 px) and a laptop (1366 px), with findings, a
// lease ended by force, a locked month and a long series to show, and
// measures each: nothing reaches past the screen's edge (a table scrolled
// sideways hides columns: GSTR-1's Total, Cancelled and Net issued), and
// no number (invoice numbers, GSTINs, amounts, counts) breaks across
// lines. On the verify page the result of a broken year is not squeezed
// under the fingerprint.
func TestConsolePagesFitTheScreen(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	long := testfactory.Series(t, f.pool, f.seller, &testfactory.SeriesOpts{Code: "WHOLESALE-MUMBAI", Format: "WM/{FY}/{SEQ:7}",
		Shop: "Wholesale counter, Masjid Bunder, Mumbai"})
	issueIn(t, f, long, "2026-11-20")
	t07 := testfactory.Series(t, f.pool, f.seller, &testfactory.SeriesOpts{Code: "T07", Format: "T07/{FY}/{SEQ:5}", Shop: "Platform 2 till"})
	issueIn(t, f, t07, "2026-11-25")
	if _, err := lease.TakeLease(ctx, f.pool, t07, "till-2", "cli", start); err != nil {
		t.Fatal(err)
	}
	if _, err := lease.ForceEndLease(ctx, f.pool, t07, "Till stolen from platform 2", "cli", start); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `UPDATE invoices SET total = total + 1 WHERE number = 'CH1/26-27/00003'`); err != nil {
		t.Fatal(err)
	}
	f.clock.set(time.Date(2026, 12, 1, 0, 5, 0, 0, gst.IST))

	b := browsertest.Start(t)
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		browsertest.Do(t, b, what, steps...)
	}
	const oneLine = "code:not(.hash), .nowrap, td.n, .num" // a fingerprint may wrap
	measure := func(p string, width int64) {
		t.Helper()
		do(p, chromedp.EmulateViewport(width, 900), chromedp.Navigate(f.url+p), chromedp.WaitVisible(chromedp.CSS("main")))
		l, err := browsertest.Measure(b, oneLine)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Overflows) > 0 || len(l.Broken) > 0 {
			t.Errorf("%s at %d px:\npast the edge: %s\nbroken: %s", p, width, strings.Join(l.Overflows, "\n  "), strings.Join(l.Broken, "\n  "))
		}
	}
	for _, width := range []int64{390, 1366} {
		measure("/console/login", width)
	}
	var pages []string
	do("sign in", chromedp.Navigate(f.url+"/console/login"), chromedp.WaitVisible(chromedp.CSS("#key")),
		chromedp.SetValue(chromedp.CSS("#key"), f.all), chromedp.Submit(chromedp.CSS("#key")), chromedp.WaitVisible(chromedp.CSS("#series")))
	pages = append(pages, "/console/", "/console/find?number=ch1/26-27/00003", "/console/series/CH1/2026-27",
		"/console/series/CH1/2026-27/check", "/console/series/WHOLESALE-MUMBAI/2026-27/check", "/console/series/T07/2026-27/check",
		"/console/invoices/CH1-2026-4/cancel", "/console/gstr1?fp=112026", "/console/gstr1?fp=2026-27-Q3",
		"/console/periods/112026/lock", "/console/leases", "/console/leases/T07/settle", "/console/verify", "/console/nowhere")
	for _, width := range []int64{390, 1366} {
		for _, p := range pages {
			measure(p, width)
		}
	}
	// The verify page's Result column keeps a readable width beside the
	// fingerprint on a laptop.
	do("verify", chromedp.EmulateViewport(1366, 900), chromedp.Navigate(f.url+"/console/verify"), chromedp.WaitVisible(chromedp.CSS("#chains")))
	w, err := chromedp.Run(b, chromedp.Evaluate[[]float64](`[...document.querySelectorAll("#chains td.result")].map(td => td.getBoundingClientRect().width)`))
	if err != nil || len(w) != 3 || w[0] < 280 {
		t.Errorf("the verify page's Result cells are %v px wide (%v), want 3 of at least 280", w, err)
	}
}
