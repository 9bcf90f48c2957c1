package document_test

import (
	"fmt"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
)

// ExamplePrepare validates a request and computes its amounts before any
// database work: an intra-state sale splits the tax into CGST and SGST.
func ExamplePrepare() {
	f, _ := gst.ParseFormat("CH1/{FY}/{SEQ:5}")
	s := gst.Series{Code: "CH1", DocType: gst.Invoice, Format: f}
	seller := gst.Seller{GSTIN: "27AAPFU0939F1ZV", StateCode: "27"}
	now := time.Date(2026, 11, 29, 3, 20, 0, 0, time.UTC)
	d, err := document.Prepare(document.Request{Items: []document.ItemInput{
		{Description: "Masala chai", HSN: "0902", Quantity: "2", UnitPrice: "10.00", GSTRate: "5"},
	}}, seller, s, now, document.Policy{})
	if err != nil {
		panic(err)
	}
	t := d.Totals
	fmt.Println(d.InvoiceDate.Format(time.DateOnly), t.Taxable.StringFixed(2), t.CGST.StringFixed(2), t.SGST.StringFixed(2), t.Total.StringFixed(2))
	_, err = document.Prepare(document.Request{Items: []document.ItemInput{
		{Description: "Masala chai", HSN: "0902", Quantity: "2", UnitPrice: "1e1", GSTRate: "5"},
	}}, seller, s, now, document.Policy{})
	fmt.Println(err)
	// Output:
	// 2026-11-29 20.00 0.50 0.50 21.00
	// items[0].unit_price "1e1" must be a decimal string such as "10.50"
}
