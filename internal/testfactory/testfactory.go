// Package testfactory makes the rows tests start from: a seller, a series
// of it, and a draft invoice ready to issue, with the values most tests
// share and options for the rest. Each function fails the test when the
// database refuses. It imports series and invoice, so only their external
// test packages (series_test, invoice_test) and packages above them can
// use it; the wait helper every test can use is in internal/testwait.
package testfactory

import (
	"context"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/sellers"
	"github.com/invoiced/invoiced/series"
	"testing"
	"time"
)

// The seller most tests use.
const (
	SellerGSTIN = "27AAPFU0939F1ZV" // Maharashtra
	SellerName  = "Pune Chai Co"
)

// SellerOpts are a seller's values; empty GSTIN and Name mean SellerGSTIN
// and SellerName.
type SellerOpts struct {
	GSTIN   string
	Name    string
	Contact gst.Contact
}

// GSTIN returns the GSTIN that starts with first14, its check character
// added, for tests that make many sellers. It fails the test when first14
// is not 14 characters of a GSTIN.
func GSTIN(t testing.TB, first14 string) string {
	t.Helper()
	check, err := gst.CheckChar(first14)
	if err != nil {
		t.Fatalf("testfactory: GSTIN %s: %v", first14, err)
	}
	return first14 + string(check)
}

// Seller creates a seller (opts may be nil) and returns it.
func Seller(t testing.TB, q db.Querier, opts *SellerOpts) gst.Seller {
	t.Helper()
	o := SellerOpts{GSTIN: SellerGSTIN, Name: SellerName}
	if opts != nil {
		o.Contact = opts.Contact
		if opts.GSTIN != "" {
			o.GSTIN = opts.GSTIN
		}
		if opts.Name != "" {
			o.Name = opts.Name
		}
	}
	s, err := sellers.CreateWith(context.Background(), q, o.GSTIN, o.Name, o.Contact)
	if err != nil {
		t.Fatalf("testfactory: create seller %s: %v", o.GSTIN, err)
	}
	return s
}

// SeriesOpts are a series' values; empty fields mean code "CH1", doc type
// "invoice" and format "<code>/{FY}/{SEQ:5}" (CH1/{FY}/{SEQ:5}).
type SeriesOpts struct {
	Code    string
	DocType string
	Format  string
	Shop    string
}

// Series creates a series of seller (opts may be nil) and returns it.
func Series(t testing.TB, b db.Beginner, seller gst.Seller, opts *SeriesOpts) gst.Series {
	t.Helper()
	var o SeriesOpts
	if opts != nil {
		o = *opts
	}
	if o.Code == "" {
		o.Code = "CH1"
	}
	if o.DocType == "" {
		o.DocType = "invoice"
	}
	if o.Format == "" {
		o.Format = o.Code + "/{FY}/{SEQ:5}"
	}
	s, err := series.CreateSeries(context.Background(), b, series.NewSeries{
		SellerID: seller.ID, Code: o.Code, DocType: o.DocType, Format: o.Format, Shop: o.Shop})
	if err != nil {
		t.Fatalf("testfactory: create series %s: %v", o.Code, err)
	}
	return s
}

// Buyer is the registered buyer of a default draft, in Karnataka (an
// inter-state supply from SellerGSTIN), with the address Rule 46(d) asks
// for (BuyerAddress; its state comes from the GSTIN).
var Buyer = document.Buyer{GSTIN: "29AAGCB7383J1Z4", Name: "Bangalore Traders", Address: BuyerAddress()}

// BuyerAddress returns a new copy of Buyer's address.
func BuyerAddress() *document.Address {
	return &document.Address{Line1: "14 Residency Road", City: "Bengaluru", PIN: "560025"}
}

// Chai returns a line of masala chai (HSN 0902).
func Chai(qty, price, rate string) document.ItemInput {
	return document.ItemInput{Description: "Masala chai", HSN: "0902", Quantity: qty, UnitPrice: price, GSTRate: rate}
}

// DraftOpts are a draft's values. A nil Request means an invoice to Buyer
// of Chai("2", "10.00", "5"); a Key sets the draft's Idempotency-Key and
// its request hash to "h-<key>".
type DraftOpts struct {
	Request *document.Request
	Policy  document.Policy
	Key     string
}

// Draft prepares a draft of s, as of now (opts may be nil), and returns it.
func Draft(t testing.TB, seller gst.Seller, s gst.Series, now time.Time, opts *DraftOpts) document.Draft {
	t.Helper()
	var o DraftOpts
	if opts != nil {
		o = *opts
	}
	req := o.Request
	if req == nil {
		buyer := Buyer
		req = &document.Request{Buyer: &buyer, Items: []document.ItemInput{Chai("2", "10.00", "5")}}
	}
	d, err := document.Prepare(*req, seller, s, now, o.Policy)
	if err != nil {
		t.Fatalf("testfactory: prepare a draft of %s: %v", s.Code, err)
	}
	if o.Key != "" {
		d.IdempotencyKey, d.RequestHash = o.Key, []byte("h-"+o.Key)
	}
	return d
}
