package einvoice_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/einvoicetest"
	"github.com/invoiced/invoiced/gst"
)

// FuzzBuild: every invoice document accepts builds into a payload that
// holds against the schema and adds up (checkSums), whatever its lines,
// rates, place of supply and round-off — except one beyond INV-01's
// number ranges (a line above ₹99,999 crore, which invoiced accepts up to
// ₹10 lakh crore), which Build refuses as such and for nothing else.
func FuzzBuild(f *testing.F) {
	f.Add("2", "10.00", uint8(4), "0.333", "1.5", uint8(0), false, false, false)
	f.Add("3", "0.35", uint8(5), "1", "99.99", uint8(11), true, true, true)
	f.Add("1.5", "1000.1234", uint8(10), "999", "9999.9999", uint8(12), false, true, true)
	f.Add("999999999", "9999", uint8(10), "1", "1", uint8(1), true, false, false)
	f.Fuzz(func(t *testing.T, q1, p1 string, r1 uint8, q2, p2 string, r2 uint8, interState, service, round bool) {
		rate := func(r uint8) string { return document.ValidRates[int(r)%len(document.ValidRates)] }
		hsn := "0902"
		if service {
			hsn = "998311"
		}
		buyer := einvoicetest.BuyerGSTIN
		if interState {
			buyer = einvoicetest.OtherStateGSTIN
		}
		req := document.Request{
			InvoiceDate:   gst.DateIST(einvoicetest.Now),
			Buyer:         &document.Buyer{GSTIN: buyer, Name: "Fuzz Traders"},
			PlaceOfSupply: gst.GSTIN(buyer).StateCode(),
			Items: []document.ItemInput{
				{Description: "First line", HSN: hsn, Quantity: q1, UnitPrice: p1, GSTRate: rate(r1)},
				{Description: "Second line", HSN: "0902", Quantity: q2, UnitPrice: p2, GSTRate: rate(r2)},
			},
		}
		inv, _, err := document.NumberOffline(einvoicetest.Seller(), einvoicetest.Series(t, "FZ", "invoice"), req, 1, 1, nil, einvoicetest.Now)
		if err != nil {
			t.Skip() // not an invoice
		}
		in := einvoicetest.InputFor(buyer)
		if round {
			in.RoundOff = einvoice.RoundToRupee
		}
		p, err := einvoice.Build(inv, in)
		if err != nil {
			var se *einvoice.SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("Build: %v", err)
			}
			for _, v := range se.Violations {
				if !strings.HasPrefix(v.Message, "maximum:") {
					t.Fatalf("Build refuses an invoice for %v", v)
				}
			}
			return
		}
		checkSums(t, p)
		if !p.ValDtls.TotInvVal.Decimal().Sub(inv.Totals.Total).Equal(p.ValDtls.RndOffAmt.Decimal()) {
			t.Errorf("TotInvVal %s is not the total %s plus RndOffAmt %s", p.ValDtls.TotInvVal, inv.Totals.Total, p.ValDtls.RndOffAmt)
		}
	})
}
