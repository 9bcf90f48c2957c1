// Package einvoicetest makes the documents e-invoicing tests start from:
// invoices issued the way the server and an offline till issue them
// (document.NumberOffline), the parties of a seller in Maharashtra and
// buyers in Maharashtra and Karnataka, and their INV-01 payloads. It
// imports no database package, so the tests of einvoice, its registrars
// and the sandbox share it.
package einvoicetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/gst"
)

// The parties. The GSTINs carry valid check characters.
const (
	SellerGSTIN     = "27AAPFU0939F1ZV" // Maharashtra
	BuyerGSTIN      = "27AABCR1718E1ZP" // Maharashtra: an intra-state sale
	OtherStateGSTIN = "29AAGCB7383J1Z4" // Karnataka: an inter-state sale
)

// Now is the clock of the documents: 2026-11-29 08:50 IST.
var Now = time.Date(2026, 11, 29, 3, 20, 0, 0, time.UTC)

// Seller returns the seller the documents are issued by.
func Seller() gst.Seller {
	return gst.Seller{ID: 1, GSTIN: SellerGSTIN, Name: "Pune Chai Co", StateCode: "27"}
}

// Series returns a series of docType ("invoice", "credit_note") with the
// format CODE/{FY}/{SEQ:5}. It fails the test for an unknown type.
func Series(t testing.TB, code, docType string) gst.Series {
	t.Helper()
	dt, err := gst.ParseDocType(docType)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gst.ParseFormat(code + "/{FY}/{SEQ:5}")
	if err != nil {
		t.Fatal(err)
	}
	return gst.Series{ID: 1, SellerID: 1, Code: code, DocType: dt, Format: f}
}

// Issue returns req issued as serial in s at Now, as the server would have
// stored it. It fails the test when document refuses req.
func Issue(t testing.TB, s gst.Series, serial int64, req document.Request) document.Invoice {
	t.Helper()
	if req.InvoiceDate.IsZero() {
		req.InvoiceDate = gst.DateIST(Now)
	}
	inv, _, err := document.NumberOffline(Seller(), s, req, serial, serial, nil, Now)
	if err != nil {
		t.Fatalf("einvoicetest: issue: %v", err)
	}
	return inv
}

// Chai is a line of tea: HSN 0902.
func Chai(qty, price, rate string) document.ItemInput {
	return document.ItemInput{Description: "Masala chai", HSN: "0902", Quantity: qty, UnitPrice: price, GSTRate: rate}
}

// B2B returns an invoice to buyer (a GSTIN of this package) of items, serial
// in series CH1; the place of supply is the buyer's state.
func B2B(t testing.TB, serial int64, buyer string, items ...document.ItemInput) document.Invoice {
	t.Helper()
	if len(items) == 0 {
		items = []document.ItemInput{Chai("2", "10.00", "5")}
	}
	return Issue(t, Series(t, "CH1", "invoice"), serial, document.Request{
		Buyer:         &document.Buyer{GSTIN: buyer, Name: BuyerName(buyer)},
		PlaceOfSupply: gst.GSTIN(buyer).StateCode(),
		Items:         items,
	})
}

// BuyerName returns the name the documents give buyer.
func BuyerName(gstin string) string { return "Buyer " + gstin[:2] + " Traders" }

// SellerParty returns the seller as Build wants it.
func SellerParty() einvoice.Party {
	return einvoice.Party{GSTIN: SellerGSTIN, LegalName: "Pune Chai Company Private Limited", TradeName: "Pune Chai Co",
		Address: einvoice.Address{Line1: "12 MG Road", Line2: "Camp", Locality: "Pune", PIN: "411001", StateCode: "27"},
		Phone:   "9800000000", Email: "accounts@punechai.example"}
}

// RecipientOf returns an address for the buyer gstin in its state.
func RecipientOf(gstin string) einvoice.Recipient {
	switch gst.GSTIN(gstin).StateCode() {
	case "29":
		return einvoice.Recipient{Address: einvoice.Address{Line1: "7th Block, Koramangala", Locality: "Bengaluru", PIN: "560095", StateCode: "29"}}
	case "27":
		return einvoice.Recipient{Address: einvoice.Address{Line1: "4 Station Road", Locality: "Mumbai", PIN: "400001", StateCode: "27"}}
	}
	panic(fmt.Sprintf("einvoicetest: no address for state of %s", gstin))
}

// InputFor returns the Build input of an invoice to buyer.
func InputFor(buyer string) einvoice.Input {
	return einvoice.Input{Seller: SellerParty(), Buyer: RecipientOf(buyer)}
}

// Payload returns the payload of a B2B invoice serial to buyer. It fails
// the test when Build refuses.
func Payload(t testing.TB, serial int64, buyer string) *einvoice.Payload {
	t.Helper()
	p, err := einvoice.Build(B2B(t, serial, buyer), InputFor(buyer))
	if err != nil {
		t.Fatalf("einvoicetest: build: %v", err)
	}
	return p
}
