package api

import (
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/jsonfast"
)

// The batch body's fast path. decodeBatchEnvelope and decodeBatchItem
// decode with encoding/json: the envelope into 500 raw items, then each
// item again, strictly, through reflection (a fifth of the batch route's
// CPU). A POS batch is almost always the plain case: keys written in
// lower case as documented, strings without escapes, amounts as strings. fastBatch reads exactly that case in one pass, building the
// same values encoding/json builds; any byte outside it (an escape, a
// number, a key in other case or unknown, an original, a syntax error) makes it give up, and the body then takes the encoding/json path
// whole, which judges it as before. So the fast path changes no answer:
// FuzzFastBatch checks that whatever it accepts, encoding/json decodes
// to the same items and the same raw bytes.

// fastBatch returns the items of body, each with its decoded body, when
// body is a batch envelope of the plain case with 1 to maxBatchInvoices
// items of at most document.MaxItems lines, and false otherwise. body must
// have passed scanJSON (valid UTF-8, no repeated keys, bounded depth).
func fastBatch(body []byte) ([]batchItem, bool) {
	p := fastParser{b: body}
	p.space()
	if !p.byte('{') || !p.key("invoices") || !p.byte('[') {
		return nil, false
	}
	items := make([]batchItem, 0, 64)
	for {
		if len(items) == maxBatchInvoices {
			return nil, false
		}
		start := p.i
		var it batchItemBody
		if !p.item(&it) {
			return nil, false
		}
		if it.IdempotencyKey == "" {
			return nil, false // absent or empty: the slow path words the refusal
		}
		items = append(items, batchItem{key: it.IdempotencyKey, raw: body[start:p.i], body: &it})
		p.space()
		if p.byte(']') {
			break
		}
		if !p.byte(',') {
			return nil, false
		}
		p.space()
	}
	if !p.byte('}') || p.i != len(p.b) {
		return nil, false
	}
	return items, true
}

// fastParser reads the plain case of JSON at b[i:]. Its methods report
// false when the input leaves the plain case; the parser is then
// abandoned. Those that read a token skip the white space after it.
type fastParser struct {
	b []byte
	i int
}

// space skips JSON white space.
func (p *fastParser) space() { p.i = jsonfast.SkipSpace(p.b, p.i) }

// byte reads c.
func (p *fastParser) byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		p.space()
		return true
	}
	return false
}

// str reads a string without escapes or control characters and returns
// its contents (body is valid UTF-8, so they are what encoding/json
// returns).
func (p *fastParser) str() (string, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	for j := p.i + 1; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			s := string(p.b[p.i+1 : j])
			p.i = j + 1
			p.space()
			return s, true
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

// key reads the key name and its colon.
func (p *fastParser) key(name string) bool {
	k, ok := p.rawKey()
	return ok && string(k) == name
}

// rawKey reads a key without escapes and its colon and returns the key's
// bytes (a switch on string(k) builds no string).
func (p *fastParser) rawKey() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	j := p.i + 1
	for j < len(p.b) && p.b[j] != '"' && p.b[j] != '\\' && p.b[j] >= 0x20 {
		j++
	}
	if j >= len(p.b) || p.b[j] != '"' {
		return nil, false
	}
	k := p.b[p.i+1 : j]
	p.i = j + 1
	p.space()
	if !p.byte(':') {
		return nil, false
	}
	return k, true
}

// object reads an object whose keys are all among keys, written exactly
// so. A null value leaves its field as it is (as encoding/json does: each
// key is read once, into a zero field); for any other value it calls
// member with the key, which reports whether it read the value.
func (p *fastParser) object(keys []string, member func(key string) bool) bool {
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return true
	}
	for {
		k, ok := p.rawKey()
		if !ok {
			return false
		}
		name := ""
		for _, n := range keys {
			if string(k) == n {
				name = n
				break
			}
		}
		switch {
		case name == "":
			return false
		case p.null():
		case !member(name):
			return false
		}
		if p.byte('}') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

// null reads a null, if the value is one.
func (p *fastParser) null() bool {
	if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		p.space()
		return true
	}
	return false
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

// item reads a batch item into it; p.i is then just past the item's '}'
// and its white space is not yet skipped (the raw item ends there).
func (p *fastParser) item(it *batchItemBody) bool {
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return false
	}
	ok := p.object(itemKeys, func(k string) bool {
		var ok bool
		switch k {
		case "idempotency_key":
			it.IdempotencyKey, ok = p.str()
		case "invoice_date":
			var d string
			d, ok = p.str()
			it.InvoiceDate = &d
		case "place_of_supply":
			it.PlaceOfSupply, ok = p.str()
		case "buyer":
			it.Buyer = &buyerBody{}
			ok = p.object(buyerKeys, func(k string) bool {
				var ok bool
				switch k {
				case "gstin":
					it.Buyer.GSTIN, ok = p.str()
				case "name":
					it.Buyer.Name, ok = p.str()
				case "address":
					it.Buyer.Address, ok = p.address()
				}
				return ok
			})
		case "ship_to":
			it.ShipTo = &shipToBody{}
			ok = p.object(shipToKeys, func(k string) bool {
				var ok bool
				switch k {
				case "name":
					it.ShipTo.Name, ok = p.str()
				case "address":
					it.ShipTo.Address, ok = p.address()
				}
				return ok
			})
		case "items":
			it.Items, ok = p.lines()
		}
		return ok
	})
	if !ok {
		return false
	}
	// object skipped the white space after '}': step back onto it, so
	// the raw item is what encoding/json's RawMessage holds.
	for p.i > 0 && p.b[p.i-1] != '}' {
		p.i--
	}
	return true
}

// address reads an address object.
func (p *fastParser) address() (*addressBody, bool) {
	a := &addressBody{}
	ok := p.object(addressKeys, func(k string) bool {
		var ok bool
		switch k {
		case "line1":
			a.Line1, ok = p.str()
		case "line2":
			a.Line2, ok = p.str()
		case "city":
			a.City, ok = p.str()
		case "pin":
			a.PIN, ok = p.str()
		case "state":
			a.State, ok = p.str()
		}
		return ok
	})
	return a, ok
}

// lines reads an item's array of lines, at most document.MaxItems.
func (p *fastParser) lines() ([]itemBody, bool) {
	if !p.byte('[') {
		return nil, false
	}
	out := make([]itemBody, 0, 4)
	if p.byte(']') {
		return out, true
	}
	for len(out) < document.MaxItems {
		var l itemBody
		ok := p.object(lineKeys, func(k string) bool {
			var ok bool
			switch k {
			case "description":
				l.Description, ok = p.str()
			case "hsn":
				l.HSN, ok = p.str()
			case "quantity":
				l.Quantity.s, ok = p.str()
			case "unit_price":
				l.UnitPrice.s, ok = p.str()
			case "gst_rate":
				l.GSTRate.s, ok = p.str()
			}
			return ok
		})
		if !ok {
			return nil, false
		}
		out = append(out, l)
		if p.byte(']') {
			return out, true
		}
		if !p.byte(',') {
			return nil, false
		}
	}
	return nil, false
}
