package api

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/invoiced/invoiced/internal/benchcpu"
)

// sampleResults returns batch results with every field set or left out,
// and text in f (escaped by encoding/json or not).
func sampleResults(f string) batchResultsJSON {
	full := invoiceJSON{ID: "CH1-2026-7" + f, Number: "CH1/26-27/00007", Serial: 7, FY: "2026-27", Series: "CH1",
		DocType: "invoice", InvoiceDate: "2026-11-29", IssuedAt: "2026-11-29T04:30:00.000000Z", Status: "cancelled",
		PublicID: "p" + f, ReceiptURL: "/r/p",
		Buyer:         &buyerJSON{GSTIN: "29AAGCB7383J1Z4", Name: f, Address: &addressJSON{Line1: f, Line2: f, City: f, PIN: "560025", State: "29"}},
		ShipTo:        &shipToJSON{Name: f, Address: addressJSON{Line1: f, Line2: f, City: f, PIN: f, State: "29"}},
		PlaceOfSupply: "29", Original: &originalJSON{Number: "CH1/26-27/00001", InvoiceDate: "2026-11-01", External: true, Reason: f},
		Totals: totalsJSON{Taxable: "20.00", CGST: "0.50", SGST: "0.50", IGST: "0.00", Total: "21.00"},
		Items: []itemJSON{{Description: f, HSN: "0902", Quantity: "2", UnitPrice: "10.00", GSTRate: "5", Taxable: "20.00",
			CGST: "0.50", SGST: "0.50", IGST: "0.00", Total: "21.00"}, {Description: "Samosa"}},
		CancelledAt: "2026-11-30T01:00:00.000000Z", CancelReason: f,
		EInvoice: &eInvoiceJSON{Status: "registered", IRN: f, AckNo: "112610000000001", AckDate: "2026-11-29T04:30:05.000000Z", SignedQRCode: f, Error: f}}
	plain := invoiceJSON{ID: "A-1", Items: []itemJSON{}, Buyer: &buyerJSON{Name: f, Address: &addressJSON{Line1: f, City: f, State: "27"}},
		ShipTo: &shipToJSON{Address: addressJSON{Line1: f, City: f, State: "96"}}, EInvoice: &eInvoiceJSON{Status: f}}
	empty := invoiceJSON{Buyer: &buyerJSON{Address: &addressJSON{}}, ShipTo: &shipToJSON{}, Original: &originalJSON{}}
	gstinOnly := invoiceJSON{Buyer: &buyerJSON{GSTIN: f, Address: &addressJSON{}}}
	return batchResultsJSON{Results: []batchResultJSON{
		{Status: 201, Invoice: &full}, {Status: 201, Replayed: true, Invoice: &plain}, {Status: 201, Invoice: &empty}, {Status: 201, Invoice: &gstinOnly},
		{Status: 422, Error: &errorDetail{Code: "invalid", Message: f}}, {},
	}}
}

func sameAsMarshal(t *testing.T, r batchResultsJSON) {
	t.Helper()
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := appendBatchResults(nil, r); !bytes.Equal(got, want) {
		t.Fatalf("appendBatchResults:\n%s\njson.Marshal:\n%s", got, want)
	}
}

// The hand-written batch answer is json.Marshal's, byte for byte: every
// field present and absent, strings encoding/json escapes (HTML, quotes,
// control characters, U+2028, invalid UTF-8) and ones it copies.
func TestBatchJSONIsMarshal(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"", "Masala chai", `Chai & Co <Pune> "best"`, "a\\b\tc\n", "Café ☕", "\u2028\u2029", "\xff\xfe", "\x00\x1f\x7f"} {
		sameAsMarshal(t, sampleResults(f))
	}
	sameAsMarshal(t, batchResultsJSON{})
	sameAsMarshal(t, batchResultsJSON{Results: []batchResultJSON{{Status: 201, Invoice: &invoiceJSON{}}}})
}

// FuzzBatchJSON: for any text, the hand-written answer is json.Marshal's.
func FuzzBatchJSON(f *testing.F) {
	f.Add("Chai & Co <Pune>")
	f.Add("\xff\u2028\"")
	f.Fuzz(func(t *testing.T, s string) {
		sameAsMarshal(t, sampleResults(s))
	})
}

// BenchmarkBatchAnswer measures writing the answer of 500 POS invoices,
// by hand and, for comparison, by json.Marshal.
func BenchmarkBatchAnswer(b *testing.B) {
	r := sampleResults("Masala chai")
	one := r.Results[0]
	one.Invoice.Buyer, one.Invoice.Original, one.Invoice.CancelledAt, one.Invoice.CancelReason = nil, nil, "", ""
	r.Results = make([]batchResultJSON, maxBatchInvoices)
	for i := range r.Results {
		r.Results[i] = one
	}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		defer benchcpu.Start(b, "inv", maxBatchInvoices)()
		for b.Loop() {
			appendBatchResults(make([]byte, 0, 1024*len(r.Results)), r)
		}
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		defer benchcpu.Start(b, "inv", maxBatchInvoices)()
		for b.Loop() {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
