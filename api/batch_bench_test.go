package api

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkDecodeBatchEnvelope measures the envelope of a batch of 500
// POS invoices (the bench's --batch 500 body): CPU per batch, relative.
func BenchmarkDecodeBatchEnvelope(b *testing.B) {
	var body bytes.Buffer
	body.WriteString(`{"invoices":[`)
	for i := range maxBatchInvoices {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"idempotency_key":"bench-%d","invoice_date":null,"place_of_supply":"24",`+
			`"items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"},`+
			`{"description":"Samosa","hsn":"2106","quantity":"1","unit_price":"15.00","gst_rate":"5"}]}`, i)
	}
	body.WriteString(`]}`)
	b.SetBytes(int64(body.Len()))
	for b.Loop() {
		if _, err := decodeBatchEnvelope(body.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}
