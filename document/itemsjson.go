package document

import (
	"encoding/json"
	"strconv"

	"github.com/invoiced/invoiced/internal/jsonfast"
	"github.com/shopspring/decimal"
)

// The items' JSON (the invoices.items column) and the decimals of the chain
// record, written without reflection, because json.Marshal of []Item and
// decimal.String weighed on the batch route (docs/bench.md, "The batch
// route's CPU per invoice"). Both produce exactly the bytes of the library
// functions they replace (itemsjson_test.go checks it), so stored rows and
// chain hashes do not change.

// itemsJSON returns json.Marshal(items).
func itemsJSON(items []Item) (string, error) {
	if items == nil || decimal.MarshalJSONWithoutQuotes {
		b, err := json.Marshal(items)
		return string(b), err
	}
	b := make([]byte, 0, 256*len(items)+2)
	b = append(b, '[')
	for i := range items {
		it := &items[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"description":`...)
		b = jsonfast.AppendString(b, it.Description)
		b = append(b, `,"hsn":`...)
		b = jsonfast.AppendString(b, it.HSN)
		for _, f := range [...]struct {
			name string
			d    *decimal.Decimal
		}{
			{`,"quantity":"`, &it.Quantity}, {`,"unit_price":"`, &it.UnitPrice}, {`,"gst_rate":"`, &it.GSTRate},
			{`,"taxable":"`, &it.Taxable}, {`,"cgst":"`, &it.CGST}, {`,"sgst":"`, &it.SGST},
			{`,"igst":"`, &it.IGST}, {`,"total":"`, &it.Total},
		} {
			b = append(b, f.name...)
			b = appendDecimal(b, *f.d)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	return string(b), nil
}

// appendDecimal appends d.String(): without an exponent, trailing zeros of
// the fraction dropped. A coefficient beyond int64, a positive exponent or
// changed package settings of decimal go through d.String itself.
func appendDecimal(b []byte, d decimal.Decimal) []byte {
	exp := d.Exponent()
	if !decimal.TrimTrailingZeros || decimal.UseScientificNotation || exp > 0 || exp < -40 || d.NumDigits() > 18 {
		return append(b, d.String()...)
	}
	c := d.CoefficientInt64()
	if c < 0 {
		b = append(b, '-')
		c = -c
	}
	var buf [20]byte
	digits := strconv.AppendInt(buf[:0], c, 10)
	if exp == 0 {
		return append(b, digits...)
	}
	scale := int(-exp)
	var intPart, frac []byte
	leading := 0
	if len(digits) > scale {
		intPart, frac = digits[:len(digits)-scale], digits[len(digits)-scale:]
	} else {
		intPart, frac, leading = []byte{'0'}, digits, scale-len(digits)
	}
	for len(frac) > 0 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	b = append(b, intPart...)
	if len(frac) == 0 {
		return b
	}
	b = append(b, '.')
	for range leading {
		b = append(b, '0')
	}
	return append(b, frac...)
}

// decimalString returns d.String() (see appendDecimal).
func decimalString(d decimal.Decimal) string {
	var buf [48]byte
	return string(appendDecimal(buf[:0], d))
}
