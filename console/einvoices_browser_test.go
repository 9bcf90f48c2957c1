package console_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/invoiced/invoiced/internal/browsertest"
)

// TestEInvoicesInBrowser: the series-year page shows each invoice's
// registration at the IRP (registered with its Ack No., pending with what
// the last attempt met, failed linking to the list), and the E-invoices
// page lists the registrations that need a person, with the IRP's words.
func TestEInvoicesInBrowser(t *testing.T) {
	t.Parallel()
	f := setup(t)
	bg := t.Context()
	// As the IRP workers record them (einvoice/registration).
	for _, q := range []struct {
		inv  int
		stmt string
	}{
		{0, `INSERT INTO e_invoices (invoice_id, seller_id, status, irn, ack_no, ack_date) VALUES ($1, $2, 'registered', 'a5c12dca80e743321740b003b2e4a0a3b1e9d7bc5d7c9a1f0e3c4d5b6a7f8e9d', '112610000000042', now())`},
		{1, `INSERT INTO e_invoices (invoice_id, seller_id, status, error, next_at) VALUES ($1, $2, 'pending', 'e-invoice register: unknown: no answer within 30s', now() + interval '1 minute')`},
		{2, `INSERT INTO e_invoices (invoice_id, seller_id, status, error) VALUES ($1, $2, 'failed', 'e-invoice register: rejected: 2172 IGST cannot be charged on an intra-state supply')`},
	} {
		if _, err := f.pool.Exec(bg, q.stmt, f.invs[q.inv].ID, f.seller.ID); err != nil {
			t.Fatal(err)
		}
	}
	ctx := browsertest.Start(t)
	dir := browsertest.ScreenshotDir(t)
	browsertest.Do(t, ctx, "sign in", chromedp.Navigate(f.url+"/console/login"), chromedp.WaitVisible(chromedp.CSS("#key")),
		chromedp.SetValue(chromedp.CSS("#key"), f.read), chromedp.Submit(chromedp.CSS("#key")), chromedp.WaitVisible(chromedp.CSS("#series")))
	browsertest.Do(t, ctx, "open CH1 2026-27", chromedp.Navigate(f.url+"/console/series/CH1/2026-27"), chromedp.WaitVisible(chromedp.CSS("#rows")))
	for number, want := range map[string][]string{
		f.invs[0].Number: {"registered", "Ack 112610000000042"},
		f.invs[1].Number: {"pending", "no answer within 30s"},
		f.invs[2].Number: {"failed"},
	} {
		got := browsertest.Text(t, ctx, `tr[data-number="`+number+`"] td.einvoice`)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s's e-invoice cell %q lacks %q", number, got, w)
			}
		}
	}
	if got := browsertest.Text(t, ctx, `tr[data-number="`+f.invs[3].Number+`"] td.einvoice`); strings.TrimSpace(got) != "" {
		t.Errorf("an invoice without a registration shows %q", got)
	}
	browsertest.Shoot(t, ctx, dir, "console-series-einvoices")

	browsertest.Do(t, ctx, "follow the failed one", chromedp.Click(chromedp.CSS(`tr[data-number="`+f.invs[2].Number+`"] td.einvoice a`)),
		chromedp.WaitVisible(chromedp.CSS("#problems")))
	got := browsertest.Text(t, ctx, "#problems")
	if !strings.Contains(got, f.invs[2].Number) || !strings.Contains(got, "2172 IGST cannot be charged") || !strings.Contains(got, "failed") {
		t.Fatalf("the E-invoices page lists:\n%s", got)
	}
	for _, n := range []string{f.invs[0].Number, f.invs[1].Number} {
		if strings.Contains(got, n) {
			t.Errorf("the E-invoices page lists %s, which needs nobody", n)
		}
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('nav a[aria-current="page"][href="/console/e-invoices"]').length`)); err != nil || n != 1 {
		t.Errorf("the nav does not mark E-invoices current (%d, %v)", n, err)
	}
	browsertest.Shoot(t, ctx, dir, "console-einvoices")
}
