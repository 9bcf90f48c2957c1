package invoice

import (
	"strings"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
)

// KindOpening is the kind of the chain record that seals an opening
// declaration: always the first record of its series-year.
const KindOpening = "opening"

// ErrOpeningTooLate is returned when the series-year already has invoices
// (or an opening), so where it stands can no longer be declared.
var ErrOpeningTooLate = apperr.New(apperr.Conflict, "opening_too_late", "the series-year already has invoices; an opening can be declared only before the first")

// Opening declares where a series stood in a financial year before it
// moved to invoiced: serials 1..LastSerial were issued elsewhere, the last
// numbered LastNumber and dated LastInvoiceDate. The first number invoiced
// issues in that year is LastSerial+1, dated no earlier than
// LastInvoiceDate.
type Opening struct {
	FY              gst.FY
	LastSerial      int64
	LastInvoiceDate time.Time // civil date
	LastNumber      string
	DeclaredAt      time.Time
	DeclaredBy      string // "key ik_<prefix>" or "cli"
}

// check returns document.ErrInvalid unless o fits series s on the day today (IST):
// a valid year, a serial below the format's capacity, a date inside the
// year and not after today, and the number the format renders for the
// serial.
func (o *Opening) check(s gst.Series, today time.Time) error {
	if !o.FY.Valid() {
		return apperr.Errorf(document.ErrInvalid, "opening.fy is not a financial year")
	}
	if o.LastSerial < 1 || o.LastSerial >= s.Format.Capacity() {
		return apperr.Errorf(document.ErrInvalid, "opening.last_serial must be 1 to %d (the format's capacity is %d)", s.Format.Capacity()-1, s.Format.Capacity())
	}
	if gst.FYOf(o.LastInvoiceDate) != o.FY || o.LastInvoiceDate.After(today) {
		return apperr.Errorf(document.ErrInvalid, "opening.last_invoice_date %s must lie in %s and not after today (%s)", o.LastInvoiceDate.Format(time.DateOnly), o.FY, today.Format(time.DateOnly))
	}
	want, err := s.Format.Render(o.FY, o.LastSerial)
	if err != nil {
		return apperr.Errorf(document.ErrInvalid, "opening: %s", apperr.MessageOf(err))
	}
	if strings.ToUpper(strings.TrimSpace(o.LastNumber)) != want {
		return apperr.Errorf(document.ErrInvalid, "opening.last_number %q is not what the series' format %s renders for serial %d in %s (%s)", o.LastNumber, s.Format, o.LastSerial, o.FY, want)
	}
	o.LastNumber = want
	return nil
}

// OpeningRecord returns the chain record that seals opening o of series s
// of the seller with gstin: position 1, kind opening, serial and number of
// the last document issued before, its date, issued_at and recorded_at
// the declaration's time, reason "declared by …", no buyer, items or
// amounts (0.00), no previous hash. docs/chain.md documents it.
func OpeningRecord(gstin string, s gst.Series, o Opening) document.Record {
	return document.Record{
		GSTIN: gstin, FY: o.FY, Series: s.Code, DocType: s.DocType, Position: 1, Kind: KindOpening,
		Serial: o.LastSerial, Number: o.LastNumber, InvoiceDate: o.LastInvoiceDate,
		IssuedAt: o.DeclaredAt, RecordedAt: o.DeclaredAt, Reason: "declared by " + o.DeclaredBy,
	}
}
