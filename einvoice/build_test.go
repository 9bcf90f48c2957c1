package einvoice_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/einvoicetest"
	"github.com/invoiced/invoiced/gst"
	"github.com/shopspring/decimal"
)

const (
	intra = einvoicetest.BuyerGSTIN
	inter = einvoicetest.OtherStateGSTIN
)

// TestBuildIntraState pins the whole payload of an intra-state invoice:
// CGST and SGST, half the rate each, the stored amounts to the paisa.
func TestBuildIntraState(t *testing.T) {
	t.Parallel()
	inv := einvoicetest.B2B(t, 7, intra, einvoicetest.Chai("2", "10.00", "5"),
		document.ItemInput{Description: "Tea consulting", HSN: "998311", Quantity: "1.5", UnitPrice: "1000.1234", GSTRate: "18"})
	p, err := einvoice.Build(inv, einvoicetest.InputFor(intra))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(p, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	want := `{
 "Version": "1.1",
 "TranDtls": {
  "TaxSch": "GST",
  "SupTyp": "B2B",
  "RegRev": "N",
  "IgstOnIntra": "N"
 },
 "DocDtls": {
  "Typ": "INV",
  "No": "CH1/26-27/00007",
  "Dt": "29/11/2026"
 },
 "SellerDtls": {
  "Gstin": "27AAPFU0939F1ZV",
  "LglNm": "Pune Chai Company Private Limited",
  "TrdNm": "Pune Chai Co",
  "Addr1": "12 MG Road",
  "Addr2": "Camp",
  "Loc": "Pune",
  "Pin": 411001,
  "Stcd": "27",
  "Ph": "9800000000",
  "Em": "accounts@punechai.example"
 },
 "BuyerDtls": {
  "Gstin": "27AABCR1718E1ZP",
  "LglNm": "Buyer 27 Traders",
  "Pos": "27",
  "Addr1": "4 Station Road",
  "Loc": "Mumbai",
  "Pin": 400001,
  "Stcd": "27"
 },
 "ItemList": [
  {
   "SlNo": "1",
   "PrdDesc": "Masala chai",
   "IsServc": "N",
   "HsnCd": "0902",
   "Qty": 2,
   "Unit": "OTH",
   "UnitPrice": 10,
   "TotAmt": 20,
   "Discount": 0,
   "AssAmt": 20,
   "GstRt": 5,
   "IgstAmt": 0,
   "CgstAmt": 0.5,
   "SgstAmt": 0.5,
   "TotItemVal": 21
  },
  {
   "SlNo": "2",
   "PrdDesc": "Tea consulting",
   "IsServc": "Y",
   "HsnCd": "998311",
   "Qty": 1.5,
   "UnitPrice": 1000.123,
   "TotAmt": 1500.19,
   "Discount": 0,
   "AssAmt": 1500.19,
   "GstRt": 18,
   "IgstAmt": 0,
   "CgstAmt": 135.02,
   "SgstAmt": 135.02,
   "TotItemVal": 1770.23
  }
 ],
 "ValDtls": {
  "AssVal": 1520.19,
  "CgstVal": 135.52,
  "SgstVal": 135.52,
  "IgstVal": 0,
  "Discount": 0,
  "RndOffAmt": 0,
  "TotInvVal": 1791.23
 }
}`
	if string(got) != want {
		t.Errorf("payload:\n%s\nwant:\n%s", got, want)
	}
}

// TestBuildDocuments builds the project's kinds of document and checks what
// distinguishes each, and that every payload adds up.
func TestBuildDocuments(t *testing.T) {
	t.Parallel()
	orig := &document.Original{Number: "CH1/26-27/00007", InvoiceDate: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)}
	note := func(docType string, buyer string) document.Invoice {
		return einvoicetest.Issue(t, einvoicetest.Series(t, "CN1", docType), 3, document.Request{
			Buyer: &document.Buyer{GSTIN: buyer, Name: "Buyer Co"}, PlaceOfSupply: gst.GSTIN(buyer).StateCode(),
			Items: []document.ItemInput{einvoicetest.Chai("1", "99.99", "12")}, Original: orig,
		})
	}
	for _, c := range []struct {
		name      string
		inv       document.Invoice
		buyer     string
		roundOff  einvoice.RoundOff
		typ       einvoice.DocType
		igst      bool
		prec      bool
		rndOff    string
		totInvVal string
	}{
		{"intra-state invoice: CGST and SGST", einvoicetest.B2B(t, 1, intra), intra, einvoice.NoRoundOff, einvoice.TypeInvoice, false, false, "0", "21"},
		{"inter-state invoice: IGST", einvoicetest.B2B(t, 2, inter), inter, einvoice.NoRoundOff, einvoice.TypeInvoice, true, false, "0", "21"},
		{"credit note names its invoice", note("credit_note", inter), inter, einvoice.NoRoundOff, einvoice.TypeCreditNote, true, true, "0", "111.99"},
		{"debit note names its invoice", note("debit_note", intra), intra, einvoice.NoRoundOff, einvoice.TypeDebitNote, false, true, "0", "111.99"},
		// 99.99 + 12 % = 111.9888 → 111.99 (CGST 6.00 + SGST 6.00 on 99.99): rounds to 112
		{"round-off to the rupee, up", note("debit_note", intra), intra, einvoice.RoundToRupee, einvoice.TypeDebitNote, false, true, "0.01", "112"},
		// 100.30 + 5 % IGST (5.015 → 5.02) = 105.32 → 105
		{"round-off to the rupee, down", einvoicetest.B2B(t, 4, inter, einvoicetest.Chai("1", "100.30", "5")),
			inter, einvoice.RoundToRupee, einvoice.TypeInvoice, true, false, "-0.32", "105"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in := einvoicetest.InputFor(c.buyer)
			in.RoundOff = c.roundOff
			p, err := einvoice.Build(c.inv, in)
			if err != nil {
				t.Fatal(err)
			}
			if p.DocDtls.Typ != c.typ || p.DocDtls.No != c.inv.Number || p.BuyerDtls.Pos != c.inv.PlaceOfSupply {
				t.Errorf("DocDtls %+v, Pos %s; want %s %s, Pos %s", p.DocDtls, p.BuyerDtls.Pos, c.typ, c.inv.Number, c.inv.PlaceOfSupply)
			}
			v := p.ValDtls
			if c.igst != v.IgstVal.Decimal().IsPositive() || c.igst == v.CgstVal.Decimal().IsPositive() {
				t.Errorf("IgstVal %s CgstVal %s SgstVal %s; want IGST only: %v", v.IgstVal, v.CgstVal, v.SgstVal, c.igst)
			}
			if (p.RefDtls != nil) != c.prec {
				t.Errorf("RefDtls %+v; want preceding document: %v", p.RefDtls, c.prec)
			} else if c.prec && (p.RefDtls.PrecDocDtls[0].InvNo != orig.Number || p.RefDtls.PrecDocDtls[0].InvDt != "20/11/2026") {
				t.Errorf("PrecDocDtls %+v; want %s of 20/11/2026", p.RefDtls.PrecDocDtls, orig.Number)
			}
			if v.RndOffAmt.String() != c.rndOff || v.TotInvVal.String() != c.totInvVal {
				t.Errorf("RndOffAmt %s TotInvVal %s; want %s %s", v.RndOffAmt, v.TotInvVal, c.rndOff, c.totInvVal)
			}
			checkSums(t, p)
		})
	}
}

// checkSums fails the test unless p adds up as the IRP checks it: each
// line's AssAmt is TotAmt less Discount and TotItemVal AssAmt with its
// taxes, the totals are the lines' sums, and TotInvVal is AssVal with the
// taxes, less Discount, plus RndOffAmt.
func checkSums(t *testing.T, p *einvoice.Payload) {
	t.Helper()
	var ass, cgst, sgst, igst decimal.Decimal
	for _, it := range p.ItemList {
		if !it.AssAmt.Decimal().Equal(it.TotAmt.Decimal().Sub(it.Discount.Decimal())) {
			t.Errorf("item %s: AssAmt %s is not TotAmt %s - Discount %s", it.SlNo, it.AssAmt, it.TotAmt, it.Discount)
		}
		if sum := it.AssAmt.Decimal().Add(it.CgstAmt.Decimal()).Add(it.SgstAmt.Decimal()).Add(it.IgstAmt.Decimal()); !sum.Equal(it.TotItemVal.Decimal()) {
			t.Errorf("item %s: TotItemVal %s is not AssAmt with taxes %s", it.SlNo, it.TotItemVal, sum)
		}
		// UnitPrice is the stored price to three places (INV-01's), so
		// Qty × UnitPrice is within Qty × ½ of a thousandth of TotAmt, and
		// within a rupee (the IRP's tolerance) below 2,000 units.
		gross := it.Qty.Decimal().Mul(it.UnitPrice.Decimal())
		slack := decimal.Max(decimal.NewFromInt(1), it.Qty.Decimal().Mul(decimal.RequireFromString("0.0005")).Add(decimal.RequireFromString("0.005")))
		if gross.Sub(it.TotAmt.Decimal()).Abs().GreaterThan(slack) {
			t.Errorf("item %s: TotAmt %s is more than %s from Qty × UnitPrice %s", it.SlNo, it.TotAmt, slack, gross)
		}
		ass, cgst, sgst, igst = ass.Add(it.AssAmt.Decimal()), cgst.Add(it.CgstAmt.Decimal()), sgst.Add(it.SgstAmt.Decimal()), igst.Add(it.IgstAmt.Decimal())
	}
	v := p.ValDtls
	for _, c := range []struct {
		name      string
		got, want decimal.Decimal
	}{
		{"AssVal", v.AssVal.Decimal(), ass}, {"CgstVal", v.CgstVal.Decimal(), cgst},
		{"SgstVal", v.SgstVal.Decimal(), sgst}, {"IgstVal", v.IgstVal.Decimal(), igst},
		{"TotInvVal", v.TotInvVal.Decimal(), ass.Add(cgst).Add(sgst).Add(igst).Sub(v.Discount.Decimal()).Add(v.RndOffAmt.Decimal())},
	} {
		if !c.got.Equal(c.want) {
			t.Errorf("ValDtls.%s %s; want %s", c.name, c.got, c.want)
		}
	}
}

// TestBuildRefuses lists what Build will not make a payload of, and that it
// says so with the right error and the field.
func TestBuildRefuses(t *testing.T) {
	t.Parallel()
	good := einvoicetest.B2B(t, 1, inter)
	cancelled := good
	cancelled.Status = document.StatusCancelled
	b2c := einvoicetest.Issue(t, einvoicetest.Series(t, "CH1", "invoice"), 1, document.Request{Items: []document.ItemInput{einvoicetest.Chai("1", "10", "5")}})
	bos := einvoicetest.Issue(t, einvoicetest.Series(t, "BS1", "bill_of_supply"), 1, document.Request{
		Buyer: &document.Buyer{GSTIN: inter, Name: "Buyer"}, PlaceOfSupply: "29", Items: []document.ItemInput{einvoicetest.Chai("1", "10", "0")}})
	export := good
	export.PlaceOfSupply = "96"
	short := einvoicetest.B2B(t, 1, inter, document.ItemInput{Description: "Ox", HSN: "0102", Quantity: "1", UnitPrice: "10", GSTRate: "5"})
	with := func(f func(*einvoice.Input)) einvoice.Input {
		in := einvoicetest.InputFor(inter)
		f(&in)
		return in
	}
	for _, c := range []struct {
		name string
		inv  document.Invoice
		in   einvoice.Input
		want error
		msg  string
	}{
		{"cancelled", cancelled, einvoicetest.InputFor(inter), einvoice.ErrNotApplicable, "is cancelled"},
		{"B2C", b2c, einvoicetest.InputFor(inter), einvoice.ErrNotApplicable, "no buyer GSTIN"},
		{"bill of supply", bos, einvoicetest.InputFor(inter), einvoice.ErrNotApplicable, "bill_of_supply needs no IRN"},
		{"export", export, einvoicetest.InputFor(inter), einvoice.ErrInvalidPayload, "place of supply 96"},
		{"seller GSTIN", good, with(func(in *einvoice.Input) { in.Seller.GSTIN = "27AAPFU0939F1ZX" }), einvoice.ErrInvalidPayload, "seller.gstin"},
		{"seller state", good, with(func(in *einvoice.Input) { in.Seller.Address.StateCode = "29" }), einvoice.ErrInvalidPayload, "seller.address.state_code 29 is not the state of GSTIN"},
		{"buyer state", good, with(func(in *einvoice.Input) { in.Buyer.Address.StateCode = "27" }), einvoice.ErrInvalidPayload, "buyer.address.state_code 27"},
		{"buyer PIN", good, with(func(in *einvoice.Input) { in.Buyer.Address.PIN = "056009" }), einvoice.ErrInvalidPayload, `buyer.address.pin "056009"`},
		{"buyer line1", good, with(func(in *einvoice.Input) { in.Buyer.Address.Line1 = " " }), einvoice.ErrInvalidPayload, "buyer.address.line1 is required"},
		{"seller locality", good, with(func(in *einvoice.Input) { in.Seller.Address.Locality = "" }), einvoice.ErrInvalidPayload, "seller.address.locality is required"},
		{"state code", good, with(func(in *einvoice.Input) { in.Buyer.Address.StateCode = "99" }), einvoice.ErrInvalidPayload, `state_code "99"`},
		{"ship-to GSTIN", good, with(func(in *einvoice.Input) {
			in.ShipTo = &einvoice.ShipTo{GSTIN: "bad", LegalName: "Depot", Address: in.Buyer.Address}
		}), einvoice.ErrInvalidPayload, "ship_to.gstin"},
		{"description shorter than INV-01 takes", short, einvoicetest.InputFor(inter), einvoice.ErrInvalidPayload, "/ItemList/0/PrdDesc: minLength"},
		{"seller name shorter than INV-01 takes", good, with(func(in *einvoice.Input) { in.Seller.LegalName = "AB" }), einvoice.ErrInvalidPayload, "/SellerDtls/LglNm: minLength"},
		{"phone", good, with(func(in *einvoice.Input) { in.Seller.Phone = "+91 98" }), einvoice.ErrInvalidPayload, "/SellerDtls/Ph"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := einvoice.Build(c.inv, c.in)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("Build = %v, %v; want %v saying %q", p, err, c.want, c.msg)
			}
		})
	}
}

// TestBuildShipTo writes a delivery address as ShipDtls.
func TestBuildShipTo(t *testing.T) {
	t.Parallel()
	in := einvoicetest.InputFor(inter)
	in.ShipTo = &einvoice.ShipTo{LegalName: "Buyer Depot", Address: einvoice.Address{Line1: "Plot 4, KIADB", Locality: "Hosur Road", PIN: "560100", StateCode: "29"}}
	p, err := einvoice.Build(einvoicetest.B2B(t, 1, inter), in)
	if err != nil {
		t.Fatal(err)
	}
	want := einvoice.ShipDtls{LglNm: "Buyer Depot", Location: einvoice.Location{Addr1: "Plot 4, KIADB", Loc: "Hosur Road", Pin: 560100, Stcd: "29"}}
	if p.ShipDtls == nil || *p.ShipDtls != want {
		t.Errorf("ShipDtls %+v; want %+v", p.ShipDtls, want)
	}
}
