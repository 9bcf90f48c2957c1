package sellers

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/freetext"
	"github.com/invoiced/invoiced/internal/textcut"
)

// The checks of what a seller stores besides its GSTIN: its name, contact
// and postal address.

var (
	phoneRE = regexp.MustCompile(`^\+?[0-9][0-9 -]{5,18}[0-9]$`)
	emailRE = regexp.MustCompile(`^[^\s@<>"]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$`)
)

func checkName(name string) error {
	if name == "" || len(name) > 200 {
		return apperr.Errorf(gst.ErrInvalidSeries, "seller name must be 1 to 200 bytes")
	}
	return nil
}

// maxPostalPart is the most characters of a postal address part: the
// IRP's Addr1, Addr2 and Loc take 100.
const maxPostalPart = 100

// CheckPostal returns ErrInvalidSeries naming the part when p is neither
// empty nor complete (a first line, a city and a PIN), when a part holds
// more than 100 characters, control, bidi or invisible characters, or when
// the PIN is not six digits, the first not 0. The zero Postal is valid.
func CheckPostal(p gst.Postal) error {
	if p == (gst.Postal{}) {
		return nil
	}
	for _, part := range []struct{ name, v string }{{"address line 1", p.Line1}, {"address line 2", p.Line2}, {"city", p.City}} {
		if n := utf8.RuneCountInString(part.v); n > maxPostalPart || !utf8.ValidString(part.v) || strings.ContainsFunc(part.v, unicode.IsControl) {
			return apperr.Errorf(gst.ErrInvalidSeries, "%s must be one line of at most %d characters", part.name, maxPostalPart)
		}
		if pr := freetext.Problem(part.v); pr != "" {
			return apperr.Errorf(gst.ErrInvalidSeries, "%s holds %s; control, bidi and invisible characters are refused", part.name, pr)
		}
	}
	if !p.Complete() {
		return apperr.Errorf(gst.ErrInvalidSeries, "a postal address needs a first line, a city and a PIN (the second line is optional)")
	}
	if !pinRE.MatchString(p.PIN) {
		return apperr.Errorf(gst.ErrInvalidSeries, "PIN %q must be six digits, the first not 0", textcut.To(p.PIN, textcut.Echo))
	}
	return nil
}

var pinRE = regexp.MustCompile(`^[1-9][0-9]{5}$`)

// CheckContact returns ErrInvalidSeries when c's address is longer than
// 300 bytes or holds control characters or invalid UTF-8, its phone is not
// digits (with an optional leading + and spaces or hyphens, 7 to 20
// characters) or its e-mail is not an address; empty fields are valid.
func CheckContact(c gst.Contact) error {
	if len(c.Address) > 300 || !utf8.ValidString(c.Address) || strings.ContainsFunc(c.Address, unicode.IsControl) {
		return apperr.Errorf(gst.ErrInvalidSeries, "address must be one line of at most 300 bytes of text")
	}
	if p := freetext.Problem(c.Address); p != "" {
		return apperr.Errorf(gst.ErrInvalidSeries, "address holds %s; control, bidi and invisible characters are refused", p)
	}
	if c.Phone != "" && !phoneRE.MatchString(c.Phone) {
		return apperr.Errorf(gst.ErrInvalidSeries, "phone %q must be digits, optionally with a leading + and spaces or hyphens", c.Phone)
	}
	if c.Email != "" && (len(c.Email) > 254 || !emailRE.MatchString(c.Email)) {
		return apperr.Errorf(gst.ErrInvalidSeries, "email %q is not an e-mail address", c.Email)
	}
	return nil
}
