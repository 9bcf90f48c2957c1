package einvoice

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/shopspring/decimal"
)

// Number is a decimal written in JSON as a number, exactly as held: the IRP's
// schema types amounts, quantities and rates as JSON numbers, while invoiced
// keeps them as decimals (never floats), so that 0.1 + 0.2 is 0.3 in the
// payload as on the receipt. The zero Number is 0.
type Number struct{ d decimal.Decimal }

// Num returns d as a Number.
func Num(d decimal.Decimal) Number { return Number{d: d} }

// NumString returns the Number written s ("12.50"); it panics when s is not
// a decimal, so it is for constants and tests.
func NumString(s string) Number { return Number{d: decimal.RequireFromString(s)} }

// Decimal returns n as a decimal.
func (n Number) Decimal() decimal.Decimal { return n.d }

// String returns n without an exponent, trailing zeros of the fraction
// dropped ("12.5").
func (n Number) String() string { return n.d.String() }

// Equal reports whether n and m are the same value (2.50 equals 2.5).
func (n Number) Equal(m Number) bool { return n.d.Equal(m.d) }

// MarshalJSON writes n as a JSON number.
func (n Number) MarshalJSON() ([]byte, error) { return []byte(n.d.String()), nil }

// errNotNumber is what UnmarshalJSON fails with for anything but a JSON
// number.
var errNotNumber = errors.New("einvoice: want a JSON number")

// UnmarshalJSON reads a JSON number. It fails for a string, null or any
// other JSON value, and for a number too large for a decimal.
func (n *Number) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || !(b[0] == '-' || b[0] >= '0' && b[0] <= '9') {
		return fmt.Errorf("%w, got %.20s", errNotNumber, b)
	}
	d, err := decimal.NewFromString(string(b))
	if err != nil {
		return fmt.Errorf("%w: %v", errNotNumber, err)
	}
	n.d = d
	return nil
}

// NumberText is a number the IRP writes as a JSON number but that is an
// identifier, not an amount (AckNo, 15 digits): kept as its digits, read
// from a JSON number or string, written as a JSON number.
type NumberText string

// MarshalJSON writes t as a JSON number; an empty t is written as null.
func (t NumberText) MarshalJSON() ([]byte, error) {
	if t == "" {
		return []byte("null"), nil
	}
	if !isDigits(string(t)) {
		return nil, fmt.Errorf("einvoice: %q is not a number", string(t))
	}
	return []byte(t), nil
}

// UnmarshalJSON reads a JSON number or a string of digits; null leaves t
// empty. It fails for anything else.
func (t *NumberText) UnmarshalJSON(b []byte) error {
	s := string(bytes.TrimSpace(b))
	if s == "null" {
		*t = ""
		return nil
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if !isDigits(s) {
		return fmt.Errorf("einvoice: %.30s is not a whole number", s)
	}
	*t = NumberText(s)
	return nil
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
