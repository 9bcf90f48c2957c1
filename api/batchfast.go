package api

import (
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/jsonfast"
)

// The batch body's fast path. decodeBatchEnvelope and decodeBatchItem
// decode with encoding/json: the envelope into 500 raw items, then each
// item again, strictly, through reflection (its cost is in docs/bench.md,
// "The batch route's CPU per invoice"). A POS batch is almost always the
// plain case: keys written in lower case as documented, strings without
// escapes, amounts as strings.
// fastBatch reads exactly that case in one pass (jsonfast.Plain), building
// the same values encoding/json builds; any byte outside it (an escape, a
// number, a key in other case or unknown, an original, a syntax error)
// makes it give up, and the body then takes the encoding/json path whole,
// which judges it as before. So the fast path changes no answer:
// FuzzFastBatch checks that whatever it accepts, encoding/json decodes to
// the same items and the same raw bytes.

// fastBatch returns the items of body, each with its decoded body, when
// body is a batch envelope of the plain case with 1 to maxBatchInvoices
// items of at most document.MaxItems lines, and false otherwise. body must
// have passed scanJSON (valid UTF-8, no repeated keys, bounded depth).
func fastBatch(body []byte) ([]batchItem, bool) {
	p := jsonfast.NewPlain(body)
	p.Space()
	if !p.Byte('{') || !p.Key("invoices") || !p.Byte('[') {
		return nil, false
	}
	items := make([]batchItem, 0, 64)
	for {
		if len(items) == maxBatchInvoices {
			return nil, false
		}
		var it batchItemBody
		raw, ok := readItem(p, &it)
		if !ok {
			return nil, false
		}
		if it.IdempotencyKey == "" {
			return nil, false // absent or empty: the slow path words the refusal
		}
		items = append(items, batchItem{key: it.IdempotencyKey, raw: raw, body: &it})
		p.Space()
		if p.Byte(']') {
			break
		}
		if !p.Byte(',') {
			return nil, false
		}
		p.Space()
	}
	if !p.Byte('}') || !p.Done() {
		return nil, false
	}
	return items, true
}

// The keys of a batch item, of its buyer, of an address, of the address
// of delivery and of a line.
var (
	itemKeys    = []string{"idempotency_key", "invoice_date", "place_of_supply", "buyer", "ship_to", "items"}
	buyerKeys   = []string{"gstin", "name", "address"}
	addressKeys = []string{"line1", "line2", "city", "pin", "state"}
	shipToKeys  = []string{"name", "address"}
	lineKeys    = []string{"description", "hsn", "quantity", "unit_price", "gst_rate"}
)

// readItem reads a batch item into it and returns the item's bytes (what
// encoding/json's RawMessage of it holds); the white space after it is
// left unread. It reports false when the item leaves the plain case.
func readItem(p *jsonfast.Plain, it *batchItemBody) ([]byte, bool) {
	return p.RawObject(itemKeys, func(k string) bool {
		var ok bool
		switch k {
		case "idempotency_key":
			it.IdempotencyKey, ok = p.Str()
		case "invoice_date":
			var d string
			d, ok = p.Str()
			it.InvoiceDate = &d
		case "place_of_supply":
			it.PlaceOfSupply, ok = p.Str()
		case "buyer":
			it.Buyer = &buyerBody{}
			ok = p.Object(buyerKeys, func(k string) bool {
				var ok bool
				switch k {
				case "gstin":
					it.Buyer.GSTIN, ok = p.Str()
				case "name":
					it.Buyer.Name, ok = p.Str()
				case "address":
					it.Buyer.Address, ok = readAddress(p)
				}
				return ok
			})
		case "ship_to":
			it.ShipTo = &shipToBody{}
			ok = p.Object(shipToKeys, func(k string) bool {
				var ok bool
				switch k {
				case "name":
					it.ShipTo.Name, ok = p.Str()
				case "address":
					it.ShipTo.Address, ok = readAddress(p)
				}
				return ok
			})
		case "items":
			it.Items, ok = readLines(p)
		}
		return ok
	})
}

// readAddress reads an address object; it reports false when the object
// leaves the plain case.
func readAddress(p *jsonfast.Plain) (*addressBody, bool) {
	a := &addressBody{}
	ok := p.Object(addressKeys, func(k string) bool {
		var ok bool
		switch k {
		case "line1":
			a.Line1, ok = p.Str()
		case "line2":
			a.Line2, ok = p.Str()
		case "city":
			a.City, ok = p.Str()
		case "pin":
			a.PIN, ok = p.Str()
		case "state":
			a.State, ok = p.Str()
		}
		return ok
	})
	return a, ok
}

// readLines reads an item's array of lines, at most document.MaxItems; it
// reports false when there are more or the array leaves the plain case.
func readLines(p *jsonfast.Plain) ([]itemBody, bool) {
	if !p.Byte('[') {
		return nil, false
	}
	out := make([]itemBody, 0, 4)
	if p.Byte(']') {
		return out, true
	}
	for len(out) < document.MaxItems {
		var l itemBody
		ok := p.Object(lineKeys, func(k string) bool {
			var ok bool
			switch k {
			case "description":
				l.Description, ok = p.Str()
			case "hsn":
				l.HSN, ok = p.Str()
			case "quantity":
				l.Quantity.s, ok = p.Str()
			case "unit_price":
				l.UnitPrice.s, ok = p.Str()
			case "gst_rate":
				l.GSTRate.s, ok = p.Str()
			}
			return ok
		})
		if !ok {
			return nil, false
		}
		out = append(out, l)
		if p.Byte(']') {
			return out, true
		}
		if !p.Byte(',') {
			return nil, false
		}
	}
	return nil, false
}
