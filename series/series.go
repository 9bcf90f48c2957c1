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
