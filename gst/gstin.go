package gst

import (
	"strings"
	"unicode/utf8"

	"github.com/invoiced/invoiced/internal/apperr"
)

// GSTIN is a validated, upper-case GST identification number: two-digit
// state code, PAN, entity number, a fourth character (usually Z) and a check
// character. Obtain one with ParseGSTIN.
type GSTIN string //nolint:revive // GSTIN is the law's name for it; gst.IN would name nothing

// gstinAlphabet gives each GSTIN character its value for the check
// character: '0'–'9' are 0–9, 'A'–'Z' are 10–35.
const gstinAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"

// gstinLen is the length of every GSTIN.
const gstinLen = 15

// ParseGSTIN trims surrounding ASCII white space from s, upper-cases its
// ASCII letters and returns it as a GSTIN. It fails with ErrInvalidGSTIN,
// naming the fault, when s contains a non-ASCII character (look-alikes such
// as Cyrillic А or fullwidth digits are refused, not folded), is not 15
// characters of the shape ^[0-9]{2}[A-Z0-9]{10}[1-9A-Z][0-9A-Z][0-9A-Z]$,
// has a state code other than 01–38, 97 or 99, or has a wrong check
// character.
func ParseGSTIN(s string) (GSTIN, error) {
	s = strings.Trim(s, " \t\r\n\v\f")
	if s == "" {
		return "", apperr.Errorf(ErrInvalidGSTIN, "GSTIN is empty")
	}
	for _, r := range s {
		if r >= utf8.RuneSelf {
			return "", apperr.Errorf(ErrInvalidGSTIN, "GSTIN %+q contains the non-ASCII character %+q; a GSTIN has only A-Z and 0-9", s, r)
		}
	}
	s = strings.ToUpper(s)
	if len(s) != gstinLen {
		return "", apperr.Errorf(ErrInvalidGSTIN, "GSTIN %q has %d characters; a GSTIN has 15", s, len(s))
	}
	for i := 0; i < gstinLen; i++ {
		c := s[i]
		var ok bool
		var want string
		switch {
		case i < 2:
			ok, want = isASCIIDigit(c), "a digit (state code)"
		case i < 12:
			ok, want = isASCIIDigit(c) || isASCIIUpper(c), "a letter or digit (PAN)"
		case i == 12:
			ok, want = isASCIIUpper(c) || c >= '1' && c <= '9', "a letter or a digit 1-9 (entity number)"
		default:
			ok, want = isASCIIDigit(c) || isASCIIUpper(c), "a letter or digit"
		}
		if !ok {
			return "", apperr.Errorf(ErrInvalidGSTIN, "GSTIN %q: character %d (%q) must be %s", s, i+1, c, want)
		}
	}
	if !validStateCode(s[:2]) {
		return "", apperr.Errorf(ErrInvalidGSTIN, "GSTIN %s: state code %s is not one of 01-38, 97 or 99", s, s[:2])
	}
	want, err := CheckChar(s[:14])
	if err != nil {
		return "", err // unreachable: the shape check above admits only alphabet characters
	}
	if s[14] != want {
		return "", apperr.Errorf(ErrInvalidGSTIN, "GSTIN %s: check character should be %c, not %c", s, want, s[14])
	}
	return GSTIN(s), nil
}

// StateCode returns the first two characters of g, its state code ("27" for
// Maharashtra), or "" when g is shorter than that.
func (g GSTIN) StateCode() string {
	if len(g) < 2 {
		return ""
	}
	return string(g[:2])
}

// String returns g as a string.
func (g GSTIN) String() string { return string(g) }

// CheckChar returns the check character (the 15th) of a GSTIN whose first 14
// characters are first14: values 0-9A-Z weighted 1, 2, 1, 2, …, each product
// p reduced to p/36 + p%36, and the check is the alphabet character at
// (36 - sum%36) % 36. It fails with ErrInvalidGSTIN when first14 is not 14
// characters of 0-9 and upper-case A-Z.
func CheckChar(first14 string) (byte, error) {
	if len(first14) != gstinLen-1 {
		return 0, apperr.Errorf(ErrInvalidGSTIN, "the check character needs 14 characters, got %d", len(first14))
	}
	sum := 0
	for i := 0; i < len(first14); i++ {
		v := strings.IndexByte(gstinAlphabet, first14[i])
		if v < 0 {
			return 0, apperr.Errorf(ErrInvalidGSTIN, "character %d (%q) of %q is not 0-9 or A-Z", i+1, first14[i], first14)
		}
		p := v * (1 + i%2)
		sum += p/36 + p%36
	}
	return gstinAlphabet[(36-sum%36)%36], nil
}

// validStateCode reports whether the two digits code are a GST state code:
// 01–38, 97 (other territory) or 99 (centre jurisdiction).
func validStateCode(code string) bool {
	n := int(code[0]-'0')*10 + int(code[1]-'0')
	return n >= 1 && n <= 38 || n == 97 || n == 99
}

func isASCIIDigit(c byte) bool { return c >= '0' && c <= '9' }
func isASCIIUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
