package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/invoiced/invoiced/internal/browsertest"
)

// TestReceiptFitsThePaper lays receipts out in headless Chromium at the
// printable width of their paper, as printed (print media) and on a
// screen that narrow: an 80 mm roll prints 72 mm, A4 with its 12 mm
// margins 186 mm. No element reaches past the page's edge, and no number
// (the invoice number, amounts, rates, GSTINs, PINs, dates) breaks across
// lines, for the awkward cases: long words in free text, a 16-character
// number, large amounts, many lines, both addresses, a cancelled invoice,
// intra- and inter-state. The screenshots are docs/img's receipt-*.png
// (make console-screenshots).
func TestReceiptFitsThePaper(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setContact("Platform 1, Pune Railway Station, Agarkar Nagar, Pune 411001", "+91 20 2612 0000")
	e.createSeries("LONG", "invoice", "WWWWWW/{SEQ:9}")
	long := strings.Repeat("Darjeeling", 12) // a 120-character word
	items := `"items":[` +
		`{"description":"Masala chai, 250 g pack (CTC, Assam)","hsn":"0902","quantity":"1000","unit_price":"123456.78","gst_rate":"5"},` +
		`{"description":"` + long + `","hsn":"09024020","quantity":"2.125","unit_price":"0.0125","gst_rate":"18"},` +
		`{"description":"Steel tumbler","hsn":"7323","quantity":"999","unit_price":"99999.99","gst_rate":"28"}]`
	issue := func(code, body string) invoiceOut {
		r := e.do("POST", "/v1/series/"+code+"/invoices", e.all, body)
		e.wantStatus(r, http.StatusCreated)
		return e.invoice(r)
	}
	intra := issue("CH1", `{"buyer":{"name":"Śrī Stores, Kothrud",`+pune+`},"ship_to":{"address":{"line1":"3 FC Road","city":"Pune","pin":"411004","state":"27"}},`+items+`}`)
	inter := issue("LONG", `{"buyer":{"gstin":"`+buyerGSTIN+`","name":"Bengaluru Traders and Distributors Private Limited",`+
		`"address":{"line1":"`+long[:100]+`","line2":"Shanthala Nagar, Ashok Nagar","city":"Bengaluru","pin":"560025"}},`+
		`"ship_to":{"name":"Bengaluru Traders, godown 7","address":{"line1":"Plot 7, KIADB Industrial Area","city":"Hoskote","pin":"562114","state":"29"}},`+
		`"place_of_supply":"29",`+items+`}`)
	cancelled := issue("CH1", `{"buyer":{"name":"Asha"},"items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]}`)
	e.wantStatus(e.do("POST", "/v1/invoices/"+cancelled.ID+"/cancel", e.all, `{"reason":"Wrong buyer on the bill, entered twice at the counter"}`), http.StatusOK)
	if len(inter.Number) != 16 {
		t.Fatalf("the long number %q is not 16 characters", inter.Number)
	}

	ctx := browsertest.Start(t)
	dir := browsertest.ScreenshotDir(t)
	const oneLine = "#number, .num, td.n"
	for _, p := range []struct {
		name, query string
		width       int64
		media       []string
	}{
		{"80mm", "?paper=80mm", browsertest.MMToPx(72), []string{"print", "screen"}},
		{"a4", "", browsertest.MMToPx(186), []string{"print", "screen"}},
		{"phone", "", 390, []string{"screen"}}, // a buyer opening the link
	} {
		for _, inv := range []invoiceOut{intra, inter, cancelled} {
			for _, media := range p.media {
				browsertest.Do(t, ctx, p.name+" "+inv.Number, chromedp.EmulateViewport(p.width, 900), browsertest.Media(media),
					chromedp.Navigate(e.url+"/r/"+inv.PublicID+p.query), chromedp.WaitVisible(chromedp.CSS("#number")))
				l, err := browsertest.Measure(ctx, oneLine)
				if err != nil {
					t.Fatal(err)
				}
				if l.Width != int(p.width) || len(l.Overflows) > 0 || len(l.Broken) > 0 {
					t.Errorf("%s receipt of %s (%s, %d px wide):\npast the edge: %s\nbroken: %s", p.name, inv.Number, media, l.Width,
						strings.Join(l.Overflows, "\n  "), strings.Join(l.Broken, "\n  "))
				}
			}
		}
	}
	// Screenshots of an everyday sale at the paper's width, on screen.
	sale := issue("CH1", `{"buyer":{"gstin":"`+buyerGSTIN+`","name":"Bengaluru Traders",`+
		`"address":{"line1":"14 Residency Road","line2":"Shanthala Nagar","city":"Bengaluru","pin":"560025"}},`+
		`"ship_to":{"name":"Bengaluru Traders, godown","address":{"line1":"Plot 7, KIADB","city":"Hoskote","pin":"562114","state":"29"}},`+
		`"place_of_supply":"29","items":[{"description":"Masala chai, 250 g","hsn":"0902","quantity":"10","unit_price":"125.50","gst_rate":"5"},`+
		`{"description":"Steel tumbler","hsn":"7323","quantity":"2","unit_price":"99.99","gst_rate":"18"}]}`)
	for name, shot := range map[string]struct {
		inv   invoiceOut
		query string
		width int64
	}{
		"receipt-80mm":      {sale, "?paper=80mm", browsertest.MMToPx(72)},
		"receipt-a4":        {sale, "", 794}, // the A4 sheet, 210 mm
		"receipt-cancelled": {cancelled, "", 794},
	} {
		browsertest.Do(t, ctx, name, chromedp.EmulateViewport(shot.width, 900), browsertest.Media("screen"),
			chromedp.Navigate(e.url+"/r/"+shot.inv.PublicID+shot.query), chromedp.WaitVisible(chromedp.CSS("#number")))
		browsertest.Shoot(t, ctx, dir, name)
	}
}
