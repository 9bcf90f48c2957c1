package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
)

func TestDecodeIssueRequest(t *testing.T) {
	t.Parallel()
	req, err := decodeIssueRequest([]byte(`{"invoice_date":"2026-11-29","buyer":{"gstin":"29AAGCB7383J1Z4","name":"B"},"place_of_supply":"29",` +
		`"items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !req.InvoiceDate.Equal(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)) || req.Buyer == nil || req.Buyer.GSTIN != "29AAGCB7383J1Z4" ||
		req.PlaceOfSupply != "29" || len(req.Items) != 1 || req.Items[0] != (document.ItemInput{Description: "Masala chai", HSN: "0902", Quantity: "2", UnitPrice: "10.00", GSTRate: "5"}) {
		t.Fatalf("decoded %+v", req)
	}
	many := `{"items":[` + strings.Repeat(`{"description":"x","hsn":"0902","quantity":"1","unit_price":"1","gst_rate":"5"},`, document.MaxItems) +
		`{"description":"x","hsn":"0902","quantity":"1","unit_price":"1","gst_rate":"5"}]}`
	for body, want := range map[string]int{
		`{"items":[{"quantity":2}]}`:               422,
		`{"items":[{"unit_price":1e3}]}`:           422,
		`{"items":[{"unit_price":1e400}]}`:         422,
		`{"items":[{"gst_rate":-5}]}`:              422,
		`{"items":[{"gst_rate":{}}]}`:              422,
		many:                                       422,
		`{"invoice_date":"2026-1-29"}`:             422,
		`{"invoice_date":"2026-11-29T00:00:00Z"}`:  422,
		`{"invoice_date":20261129}`:                422,
		`{"original":{"invoice_date":"29/11/26"}}`: 422,
		`{"items":[]} x`:                           400,
		`{"items":[]}{"items":[]}`:                 400,
		`{"Items":[], "items":[], "zz":1}`:         400,
		``:                                         400,
		`null `:                                    200,
		`"str"`:                                    400,
		`{"items":[{"description":"\ud800"}]}`:     200,
		`{"a":` + strings.Repeat(`{"a":`, 9) + `1` + strings.Repeat(`}`, 10) + `}`: 400,
		`{"\u0069tems":[]}`:                                 400, // an escaped key
		`{"items":[{"description":"a,b,\"c\",[d]"}]}`:       200, // commas and brackets in strings are text
		`{"items":[],"items":[]}`:                           400, // a repeated key
		`{"items":[{"hsn":"0902","HSN":"0903"}]}`:           400, // repeated as encoding/json matches
		"{\"items\":[{\"description\":\"\xff\"}]}":          400, // invalid UTF-8
		`{"items":[` + strings.Repeat(`{},`, 5000) + `{}]}`: 422,
	} {
		_, err := decodeIssueRequest([]byte(body))
		got := 200
		if err != nil {
			got = statusOf[apperr.KindOf(err)]
		}
		if got != want {
			t.Errorf("%.60q: status %d (%v), want %d", body, got, err, want)
		}
	}
}

func TestReadJSON(t *testing.T) {
	t.Parallel()
	for ct, want := range map[string]int{
		"application/json":                 200,
		"application/json; charset=utf-8":  200,
		"Application/JSON; charset=UTF-8":  200,
		"application/json; charset=latin1": 415,
		"text/plain":                       415,
		"":                                 415,
		"application/json;;":               415,
	} {
		r, _ := http.NewRequest("POST", "/", strings.NewReader(`{}`))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		_, err := readJSON(nil, r, 10)
		got := 200
		if err != nil {
			got = statusOf[apperr.KindOf(err)]
		}
		if got != want {
			t.Errorf("%q: %d (%v), want %d", ct, got, err, want)
		}
	}
	r, _ := http.NewRequest("POST", "/", strings.NewReader(strings.Repeat(" ", 11)))
	r.Header.Set("Content-Type", "application/json")
	if _, err := readJSON(nil, r, 10); statusOf[apperr.KindOf(err)] != 413 {
		t.Fatalf("11 bytes over a limit of 10: %v", err)
	}
	r, _ = http.NewRequest("POST", "/", strings.NewReader(strings.Repeat(" ", 11)))
	r.Header.Set("Content-Type", "application/json")
	r.ContentLength = -1
	if _, err := readJSON(nil, r, 10); statusOf[apperr.KindOf(err)] != 413 {
		t.Fatalf("11 bytes of unknown length over a limit of 10: %v", err)
	}
}

// FuzzDecodeIssueRequest checks that any body decodes and validates to a
// value or to a 4xx error, never an internal error or a panic.
func FuzzDecodeIssueRequest(f *testing.F) {
	for _, s := range []string{
		`{"invoice_date":"2026-11-29","buyer":{"gstin":"29AAGCB7383J1Z4","name":"Bangalore Traders"},"place_of_supply":"29","items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]}`,
		`{"items":[{"description":"Chai","hsn":"0902","quantity":2,"unit_price":"10","gst_rate":"5"}]}`,
		`{"items":[{"description":"Chai","hsn":"0902","quantity":"999999999999999.999","unit_price":"999999999999999.9999","gst_rate":"28"}]}`,
		`{"original":{"number":"CH1/26-27/00001","invoice_date":"2026-11-01"},"items":[]}`,
		`{"items":[{"quantity":"1e5"}]}`, `[]`, `{}`, `null`, `{"items":null}`, `{"a":1}`, `{"items":[{}]}{}`,
		`{"invoice_date":"2026-02-29"}`, `{"buyer":{"gstin":"\u0000"}}`, `{"items":[[[[[[[[[[]]]]]]]]]]}`, "\xff",
	} {
		f.Add([]byte(s))
	}
	seller := gst.Seller{ID: 1, GSTIN: "27AAPFU0939F1ZV", Name: "S", StateCode: "27"}
	fmtCN, err := gst.ParseFormat("CN/{FY}/{SEQ:5}")
	if err != nil {
		f.Fatal(err)
	}
	sr := gst.Series{ID: 1, SellerID: 1, Code: "CN", DocType: gst.CreditNote, Format: fmtCN}
	inv := sr
	inv.DocType = gst.Invoice
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeIssueRequest(body)
		if err != nil {
			if s := statusOf[apperr.KindOf(err)]; s < 400 || s > 499 {
				t.Fatalf("decode %q: status %d: %v", body, s, err)
			}
			return
		}
		for _, s := range []gst.Series{sr, inv} {
			_, err := document.Prepare(req, seller, s, testNow, document.Policy{BackdateDays: 30})
			if err != nil {
				if st := statusOf[apperr.KindOf(err)]; st < 400 || st > 499 {
					t.Fatalf("prepare %q: status %d: %v", body, st, err)
				}
			}
		}
	})
}

// BenchmarkDecodeIssueRequest decodes a typical one-item issue body: the
// token scan's share of the issue path.
func BenchmarkDecodeIssueRequest(b *testing.B) {
	body := []byte(`{"buyer":{"gstin":"29AAGCB7383J1Z4","name":"Bangalore Traders"},"place_of_supply":"29",` +
		`"items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeIssueRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}
