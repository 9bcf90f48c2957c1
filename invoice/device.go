package invoice

import (
	"bytes"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/series"
	"github.com/shopspring/decimal"
)

// Offline numbering (docs/offline.md): a device that holds a lease of a
// series numbers invoices itself and uploads them; the server stores them
// only if it computes the same invoice and the same chain. Both sides call
// NumberOffline, so they compute the same amounts and hashes.

// ErrNotContinuation is returned (as a *ContinuationError) when an upload
// does not continue the series-year where it stands.
var ErrNotContinuation = apperr.New(apperr.Conflict, "not_continuation", "the upload does not continue the series where it stands")

// Refusals of an upload that break the lease's time and scope
// (docs/offline.md, "Time floors"): nothing of the batch is stored.
var (
	// ErrYearBeforeLease: an invoice dated in a financial year before the
	// one the lease started in.
	ErrYearBeforeLease = apperr.New(apperr.Invalid, "year_before_lease", "the invoice is dated in a financial year before the lease's")
	// ErrIssuedBeforeLease: an invoice issued before the lease was taken.
	ErrIssuedBeforeLease = apperr.New(apperr.Invalid, "issued_before_lease", "the invoice's issue time is before the lease was taken")
	// ErrNotLeasedInvoice: a device cancel of an invoice the lease did not
	// number (issued online, or under an earlier lease).
	ErrNotLeasedInvoice = apperr.New(apperr.Conflict, "invoice_not_leased", "the invoice was not numbered under this lease: cancel it online after the lease ends")
)

// ContinuationError is an upload refused because its serials do not
// continue the series-year: Expected is where the series stands.
type ContinuationError struct {
	Expected series.Position
	err      *apperr.Error
}

// Error returns the message.
func (e *ContinuationError) Error() string { return e.err.Error() }

// Unwrap returns the coded error (ErrNotContinuation).
func (e *ContinuationError) Unwrap() error { return e.err }

// OfflineInvoice is one invoice a device numbered, as it uploads it.
type OfflineInvoice struct {
	Serial   int64
	Number   string
	IssuedAt time.Time
	// Request holds the content; its InvoiceDate is the device's.
	Request Request
	// Totals are the device's amounts, compared with the server's.
	Totals    Totals
	ChainHash []byte
}

// NumberOffline prepares req as issued with serial in series s of seller at
// issuedAt, dated req.InvoiceDate (which must be issuedAt's date in IST),
// as record position of the series-year's chain after prev, and returns
// the invoice with its record's hash. It fails as PrepareContent does, with
// gst.ErrInvalidDate when the date is not issuedAt's, and with
// gst.ErrExhausted when serial is beyond the format's capacity.
func NumberOffline(seller gst.Seller, s gst.Series, req Request, serial, position int64, prev []byte, issuedAt time.Time) (Invoice, []byte, error) {
	issuedAt = issuedAt.UTC().Truncate(time.Microsecond)
	if day := gst.DateIST(issuedAt); !req.InvoiceDate.Equal(day) {
		return Invoice{}, nil, apperr.Errorf(gst.ErrInvalidDate, "invoice_date %s is not the date of issued_at %s in IST (%s)",
			req.InvoiceDate.Format(time.DateOnly), Timestamp(issuedAt), day.Format(time.DateOnly))
	}
	d, err := PrepareContent(req, seller, s, issuedAt)
	if err != nil {
		return Invoice{}, nil, err
	}
	fy := gst.FYOf(d.InvoiceDate)
	number, err := s.Format.Render(fy, serial)
	if err != nil {
		return Invoice{}, nil, apperr.Errorf(gst.ErrExhausted, "serial %d: %s", serial, apperr.MessageOf(err))
	}
	inv := Invoice{
		SellerID: seller.ID, SeriesID: s.ID, SeriesCode: s.Code, DocType: s.DocType, FY: fy, Serial: serial, Number: number,
		InvoiceDate: d.InvoiceDate, IssuedAt: issuedAt, Status: StatusIssued, Buyer: d.Buyer, PlaceOfSupply: d.PlaceOfSupply,
		Original: d.Original, Items: d.Items, Totals: d.Totals,
	}
	return inv, IssueRecord(string(seller.GSTIN), inv, position, prev).Hash(), nil
}

// checkOffline compares what the device sent (o) with the server's own
// numbering of it (inv, hash) and returns ErrInvalid naming the first
// field that differs, as "invoices[i].field".
func checkOffline(i int, o OfflineInvoice, inv Invoice, hash []byte) error {
	field := func(name, got, want string) error {
		return apperr.Errorf(ErrInvalid, "invoices[%d].%s is %s; the server computes %s", i, name, got, want)
	}
	if o.Number != inv.Number {
		return field("number", o.Number, inv.Number)
	}
	for _, f := range []struct {
		name      string
		got, want string
	}{
		{"totals.taxable", Money(o.Totals.Taxable), Money(inv.Totals.Taxable)},
		{"totals.cgst", Money(o.Totals.CGST), Money(inv.Totals.CGST)},
		{"totals.sgst", Money(o.Totals.SGST), Money(inv.Totals.SGST)},
		{"totals.igst", Money(o.Totals.IGST), Money(inv.Totals.IGST)},
		{"totals.total", Money(o.Totals.Total), Money(inv.Totals.Total)},
	} {
		if f.got != f.want {
			return field(f.name, f.got, f.want)
		}
	}
	if !bytes.Equal(o.ChainHash, hash) {
		return field("chain_hash", fmt.Sprintf("%x", o.ChainHash), fmt.Sprintf("%x", hash))
	}
	return nil
}

// ParseMoney returns the amount written in s, a plain non-negative decimal
// with at most two places ("10.50"); ErrInvalid otherwise.
func ParseMoney(s string) (decimal.Decimal, error) {
	return parseAmount("amount", s, 2, "zero or more")
}

// OfflineCancel is one cancellation a device made offline, as it uploads
// it: the invoice (its series-year, serial and number), the cancellation
// time and reason, and the cancel record's position and hash.
type OfflineCancel struct {
	FY          gst.FY
	Position    int64
	Serial      int64
	Number      string
	CancelledAt time.Time
	Reason      string
	ChainHash   []byte
}

// CancelOffline returns inv cancelled at at with reason, and the hash of
// its cancel record at position of the series-year's chain after prev
// (CancelRecord, docs/chain.md). Both the device and the server call it,
// so they compute the same hash. It fails with ErrInvalid for an empty or
// overlong reason.
func CancelOffline(gstin gst.GSTIN, inv Invoice, reason string, at time.Time, position int64, prev []byte) (Invoice, []byte, error) {
	if err := checkText("reason", reason, false); err != nil {
		return Invoice{}, nil, err
	}
	at = at.UTC().Truncate(time.Microsecond)
	inv.Status, inv.CancelledAt, inv.CancelReason = StatusCancelled, &at, reason
	return inv, CancelRecord(string(gstin), inv, position, prev).Hash(), nil
}
