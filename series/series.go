package series

import (
	"regexp"
	"strings"
	"time"

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
