package series

import (
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/freetext"
	"github.com/invoiced/invoiced/internal/textcut"
)

// NewSeries is what CreateSeries needs.
type NewSeries struct {
	SellerID int64
	Code     string
	DocType  string
	Format   string
	Shop     string
}

// Usage is the state of one series-year's counter.
type Usage struct {
	FY              gst.FY
	LastSerial      int64
	LastNumber      string
	LastInvoiceDate time.Time
	LastIssuedAt    time.Time
}

// SeriesUsage is a series with its counters, newest year first.
type SeriesUsage struct { //nolint:revive // Usage already names one year's counter; this is a series with its years
	gst.Series
	Years []Usage
}

var codeRE = regexp.MustCompile(`^[A-Z0-9][A-Z0-9-]{0,15}$`)

// ParseCode upper-cases and validates a series code: 1–16 characters of
// A-Z, 0-9 and '-', not starting with '-'. It returns ErrInvalidSeries
// otherwise. Codes appear in URL paths, so '/' is not allowed.
func ParseCode(s string) (string, error) {
	c := strings.ToUpper(strings.TrimSpace(s))
	if !codeRE.MatchString(c) {
		return "", apperr.Errorf(gst.ErrInvalidSeries, "series code %q must be 1 to 16 characters of A-Z, 0-9 and '-', starting with a letter or digit", s)
	}
	return c, nil
}

const maxShopLen = 200

func (n NewSeries) validate() (code string, dt gst.DocType, f gst.Format, err error) {
	if code, err = ParseCode(n.Code); err != nil {
		return
	}
	if dt, err = gst.ParseDocType(n.DocType); err != nil {
		return
	}
	if f, err = gst.ParseFormat(n.Format); err != nil {
		return
	}
	if len(n.Shop) > maxShopLen {
		err = apperr.Errorf(gst.ErrInvalidSeries, "shop label is longer than %d bytes", maxShopLen)
	} else if p := freetext.Problem(n.Shop); p != "" {
		err = apperr.Errorf(gst.ErrInvalidSeries, "shop label holds %s; control, bidi and invisible characters are refused", p)
	}
	return
}

var (
	phoneRE = regexp.MustCompile(`^\+?[0-9][0-9 -]{5,18}[0-9]$`)
	emailRE = regexp.MustCompile(`^[^\s@<>"]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$`)
)

func checkSellerName(name string) error {
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
