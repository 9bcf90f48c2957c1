package api

import (
	"net/http"
	"strings"
	"testing"
)

// The receipt prints Rule 46's (k)/(l) per line as the tax heads they are:
// CGST and SGST each with its rate and amount (half the GST rate each)
// within a state, IGST with the whole rate across states; (p) whether tax
// is payable on reverse charge (never, for what invoiced issues); and
// (q) a place for the authorised signatory, under the seller's name.
func TestReceiptRule46TaxHeadsReverseChargeSignatory(t *testing.T) {
	t.Parallel()
	e := setup(t)
	intra := e.invoice(e.do("POST", "/v1/series/CH1/invoices", e.all,
		`{"items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"},`+
			`{"description":"Samosa","hsn":"2106","quantity":"1","unit_price":"100.00","gst_rate":"18"}]}`))
	inter := e.invoice(e.do("POST", "/v1/series/CH1/invoices", e.all,
		`{"buyer":{"gstin":"`+buyerGSTIN+`","name":"Bengaluru Traders",`+buyerAddress+`},"place_of_supply":"29",`+
			`"items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]}`))
	page := func(id, query string) string {
		r := e.do("GET", "/r/"+id+query, "", "")
		e.wantStatus(r, http.StatusOK)
		return string(r.body)
	}
	common := []string{"Tax payable on reverse charge</td><td>No</td>", `<div class="signatory">For <bdi>Chai &amp; Co &lt;Pune&gt;</bdi>`, "Authorised signatory"}
	for name, c := range map[string]struct {
		body         string
		want, refuse []string
	}{
		"intra-state A4": {page(intra.PublicID, ""), []string{
			`<th class="n rate">CGST %</th><th class="n">CGST ₹</th><th class="n rate">SGST %</th><th class="n">SGST ₹</th>`,
			`<td class="n rate">2.5</td><td class="n">0.50</td><td class="n rate">2.5</td><td class="n">0.50</td>`,
			`<td class="n rate">9</td><td class="n">9.00</td><td class="n rate">9</td><td class="n">9.00</td>`,
		}, []string{">GST %<", "IGST"}},
		"inter-state A4": {page(inter.PublicID, ""), []string{
			`<th class="n rate">IGST %</th><th class="n">IGST ₹</th>`,
			`<td class="n rate">5</td><td class="n">1.00</td>`,
		}, []string{">GST %<", "CGST", "SGST"}},
		"intra-state 80 mm": {page(intra.PublicID, "?paper=80mm"), []string{
			`HSN <span class="num">0902</span> · <span class="num">CGST 2.5% 0.50</span> · <span class="num">SGST 2.5% 0.50</span>`,
			`HSN <span class="num">2106</span> · <span class="num">CGST 9% 9.00</span> · <span class="num">SGST 9% 9.00</span>`,
		}, []string{" GST ", "IGST"}},
		"inter-state 80 mm": {page(inter.PublicID, "?paper=80mm"), []string{`HSN <span class="num">0902</span> · <span class="num">IGST 5% 1.00</span>`}, []string{" GST ", "CGST", "SGST"}},
	} {
		for _, s := range append(c.want, common...) {
			if !strings.Contains(c.body, s) {
				t.Fatalf("%s receipt lacks %q:\n%s", name, s, c.body)
			}
		}
		for _, s := range c.refuse {
			if strings.Contains(c.body, s) {
				t.Fatalf("%s receipt shows %q:\n%s", name, s, c.body)
			}
		}
	}
}
