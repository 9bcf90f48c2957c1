package lease

import (
	"bytes"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
)

// Offline numbering (docs/offline.md): a device that holds a lease of a
// series numbers invoices itself and uploads them; the server stores them
// only if it computes the same invoice and the same chain. Both sides call
// document.NumberOffline, so they compute the same amounts and hashes.

// ErrNotContinuation is returned (as a *ContinuationError) when an upload
// does not continue the series-year where it stands.
var ErrNotContinuation = apperr.New(apperr.Conflict, "not_continuation", "the upload does not continue the series where it stands")

// Refusals of an upload that break the lease's time and scope
// (docs/offline.md, "Time floors"): nothing of the batch is stored.
var (
	// ErrYearBeforeLease: an invoice dated in a financial year before the
	// one the lease started in.
	ErrYearBeforeLease = apperr.New(apperr.Invalid, "year_before_lease", "the invoice is dated in a financial year before the lease's")
	// ErrYearAfterLease: an invoice dated in a financial year after the
	// ones the lease reserves (LeaseYears): a forced end and its
	// settlement would not cover it.
	ErrYearAfterLease = apperr.New(apperr.Invalid, "year_after_lease", "the invoice is dated in a financial year after the ones the lease reserves: end the lease and take a new one")
	// ErrIssuedBeforeLease: an invoice issued before the lease was taken.
	ErrIssuedBeforeLease = apperr.New(apperr.Invalid, "issued_before_lease", "the invoice's issue time is before the lease was taken")
	// ErrNotLeasedInvoice: a device cancel of an invoice the lease did not
	// number (issued online, or under an earlier lease).
	ErrNotLeasedInvoice = apperr.New(apperr.Conflict, "invoice_not_leased", "the invoice was not numbered under this lease: cancel it online after the lease ends")
)

// ContinuationError is an upload refused because its serials do not
// continue the series-year: Expected is where the series stands.
type ContinuationError struct {
	Expected Position
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
	Request document.Request
	// Totals are the device's amounts, compared with the server's.
	Totals    document.Totals
	ChainHash []byte
}

// checkOffline compares what the device sent (o) with the server's own
// numbering of it (inv, hash) and returns document.ErrInvalid naming the first
// field that differs, as "invoices[i].field".
func checkOffline(i int, o OfflineInvoice, inv document.Invoice, hash []byte) error {
	field := func(name, got, want string) error {
		return apperr.Errorf(document.ErrInvalid, "invoices[%d].%s is %s; the server computes %s", i, name, got, want)
	}
	if o.Number != inv.Number {
		return field("number", o.Number, inv.Number)
	}
	for _, f := range []struct {
		name      string
		got, want string
	}{
		{"totals.taxable", document.Money(o.Totals.Taxable), document.Money(inv.Totals.Taxable)},
		{"totals.cgst", document.Money(o.Totals.CGST), document.Money(inv.Totals.CGST)},
		{"totals.sgst", document.Money(o.Totals.SGST), document.Money(inv.Totals.SGST)},
		{"totals.igst", document.Money(o.Totals.IGST), document.Money(inv.Totals.IGST)},
		{"totals.total", document.Money(o.Totals.Total), document.Money(inv.Totals.Total)},
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
