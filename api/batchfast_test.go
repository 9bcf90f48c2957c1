package api

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// plainSeeds are batch bodies of the plain case (the last two refused
// for their keys), otherSeeds bodies just outside it.
var plainSeeds = []string{
	`{"invoices":[{"idempotency_key":"k1","items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]}]}`,
	" {\n \"invoices\" : [ {\"idempotency_key\" : \"k1\" , \"invoice_date\":\"2026-11-29\", \"place_of_supply\":\"24\",\t\"items\":[ ]} ,\r\n{\"idempotency_key\":\"k2\",\"buyer\":{\"gstin\":\"29AAGCB7383J1Z4\",\"name\":\"Bharat\"},\"items\":[{\"description\":\"Samosa\",\"hsn\":\"2106\",\"quantity\":\"1\",\"unit_price\":\"15.00\",\"gst_rate\":\"5\"},{}]} ] } ",
	`{"invoices":[{"idempotency_key":"k1","items":[]},{"idempotency_key":"k1","items":[]}]}`,
	`{"invoices":[{"idempotency_key":"ké","items":[]}]}`,
	`{"invoices":[{"idempotency_key":"k","buyer":{"gstin":"29AAGCB7383J1Z4","name":"B","address":{"line1":"14 Residency Road","line2":"","city":"Bengaluru","pin":"560025","state":"29"}},` +
		`"ship_to":{"name":"Godown","address":{"line1":"Plot 7","city":"Hoskote","pin":"562114","state":"29"}},"items":[]}]}`,
	`{"invoices":[{"idempotency_key":"k","buyer":{"name":"Asha","address":{}},"ship_to":{"address":{"state":"27"}},"items":[]}]}`,
}

// nullSeeds are of the plain case with nulls.
var nullSeeds = []string{
	`{"invoices":[{"idempotency_key":"k","invoice_date":null,"buyer":null,"place_of_supply":null,"items":null}]}`,
	`{"invoices":[{"idempotency_key":"k","buyer":{"gstin":null,"name":"A"},"items":[{"description":null,"quantity":null,"hsn":"0902"}]}]}`,
	`{"invoices":[{"idempotency_key":"k","buyer":{"name":"A","address":null},"ship_to":null,"items":[]}]}`,
	`{"invoices":[{"idempotency_key":"k","buyer":{"name":"A","address":{"line1":null,"pin":null}},"ship_to":{"name":null,"address":null},"items":[]}]}`,
}

var otherSeeds = []string{
	`{"invoices":[{"idempotency_key":"k\u00e9","items":[]}]}`,
	`{"invoices":[{"idempotency_key":"","items":[]}]}`,
	`{"invoices":[{"idempotency_key":null,"items":[]}]}`,
	`{"invoices":[{"idempotency_key":"k","Items":[]}]}`,
	`{"invoices":[{"idempotency_key":"k","items":[{"quantity":2}]}]}`,
	`{"invoices":[{"idempotency_key":"k","items":[{"quantity":"2","colour":"red"}]}]}`,
	`{"invoices":[{"idempotency_key":"k","original":{"number":"A1","invoice_date":"2026-11-01"}}]}`,
	`{"invoices":[{"idempotency_key":null,"buyer":null}]}`,
	`{"invoices":[{"idempotency_key":"k","buyer":nul}]}`,
	`{"invoices":[{"idempotency_key":"k"}]} x`,
	`{"invoices":[{"idempotency_key":"k"}],"x":1}`,
	`{"invoices":[]}`,
	`{"invoices":[{"idempotency_key":"k"},]}`,
	`{"invoices":[{"idempotency_key":"k" "items":[]}]}`,
	`[{"idempotency_key":"k"}]`,
	`{"invoices":[{"idempotency_key":"k","items":[{"description":"a\tb"}]}]}`,
	`{"invoices":[{"idempotency_key":"k","buyer":{"address":{"Line1":"x"}}}]}`,
	`{"invoices":[{"idempotency_key":"k","buyer":{"address":{"pin":560025}}}]}`,
	`{"invoices":[{"idempotency_key":"k","ship_to":{"address":{"line1":"x","country":"IN"}}}]}`,
	`{"invoices":[{"idempotency_key":"k","ship_to":"Hoskote"}]}`,
}

// Whatever fastBatch accepts, encoding/json reads the same: the same
// items, raw bytes (the request hash), keys, decoded bodies and envelope
// errors. Any other body goes to encoding/json whole, so the fast path
// changes no answer.
func FuzzFastBatch(f *testing.F) {
	for _, s := range slices.Concat(plainSeeds, nullSeeds, otherSeeds) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fastSame(t, body)
	})
}

func fastSame(t *testing.T, body []byte) {
	t.Helper()
	if scanJSON(body, max(maxBatchInvoices, 250)) != nil {
		return
	}
	fast, ok := fastBatch(body)
	if !ok {
		return
	}
	slow, err := decodeBatchEnvelopeJSON(body)
	ferr := checkBatchKeys(fast)
	if (err == nil) != (ferr == nil) || err != nil && err.Error() != ferr.Error() {
		t.Fatalf("%q: envelope error %v through encoding/json, %v through fastBatch", body, err, ferr)
	}
	if err != nil {
		return
	}
	if len(slow) != len(fast) {
		t.Fatalf("%q: %d items through encoding/json, %d through fastBatch", body, len(slow), len(fast))
	}
	for i := range slow {
		if slow[i].key != fast[i].key || !bytes.Equal(slow[i].raw, fast[i].raw) {
			t.Fatalf("%q: item %d: key %q raw %q through encoding/json, key %q raw %q through fastBatch",
				body, i, slow[i].key, slow[i].raw, fast[i].key, fast[i].raw)
		}
		var want batchItemBody
		if err := decodeStrict(slow[i].raw, &want, nil, 250); err != nil {
			t.Fatalf("%q: item %d: fastBatch read it, encoding/json refuses it: %v", body, i, err)
		}
		if !reflect.DeepEqual(&want, fast[i].body) {
			t.Fatalf("%q: item %d:\nencoding/json %+v\nfastBatch     %+v", body, i, want, *fast[i].body)
		}
	}
}

// The seeds agree, and the plain case does take the fast path: the POS
// body of the bench, with and without white space, B2B and B2C.
func TestFastBatch(t *testing.T) {
	t.Parallel()
	for _, s := range slices.Concat(plainSeeds, nullSeeds, otherSeeds) {
		fastSame(t, []byte(s))
	}
	var b strings.Builder
	b.WriteString("{\n  \"invoices\": [\n")
	for i := range maxBatchInvoices {
		if i > 0 {
			b.WriteString(",\n")
		}
		buyer := ""
		if i%3 == 0 {
			buyer = `"buyer": {"gstin": "29AAGCB7383J1Z4", "name": "Bharat Traders", "address": {"line1": "14 Residency Road", "city": "Bengaluru", "pin": "560025"}}, `
		}
		fmt.Fprintf(&b, `    {"idempotency_key": "pos-%d", "invoice_date": "2026-11-29", %s"place_of_supply": "27", `+
			`"items": [{"description": "Masala chai", "hsn": "0902", "quantity": "2", "unit_price": "10.00", "gst_rate": "5"}]}`, i, buyer)
	}
	b.WriteString("\n  ]\n}\n")
	for _, body := range slices.Concat([]string{b.String()}, plainSeeds, nullSeeds) {
		if _, ok := fastBatch([]byte(body)); !ok {
			t.Fatalf("fastBatch does not read the plain body %.200q", body)
		}
		fastSame(t, []byte(body))
	}
	for _, body := range otherSeeds {
		if _, ok := fastBatch([]byte(body)); ok {
			t.Errorf("fastBatch reads %q, which is outside the plain case", body)
		}
	}
}
