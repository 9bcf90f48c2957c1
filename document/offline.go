package document

import (
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/shopspring/decimal"
)

// Offline numbering (docs/offline.md): a device that holds a lease of a
// series numbers invoices itself and uploads them; the server stores them
// only if it computes the same invoice and the same chain. Both sides call
// NumberOffline, so they compute the same amounts and hashes.

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
		InvoiceDate: d.InvoiceDate, IssuedAt: issuedAt, Status: StatusIssued, Buyer: d.Buyer, ShipTo: d.ShipTo, PlaceOfSupply: d.PlaceOfSupply,
		Original: d.Original, Items: d.Items, Totals: d.Totals,
	}
	return inv, IssueRecord(string(seller.GSTIN), inv, position, prev).Hash(), nil
}

// ParseMoney returns the amount written in s, a plain non-negative decimal
// with at most two places ("10.50"); ErrInvalid otherwise.
func ParseMoney(s string) (decimal.Decimal, error) {
	return parseAmount("amount", s, 2, "zero or more")
}

// CancelOffline returns inv cancelled at at with reason, and the hash of
// its cancel record at position of the series-year's chain after prev
// (CancelRecord, docs/chain.md). Both the device and the server call it,
// so they compute the same hash. It fails with ErrInvalid for an empty or
// overlong reason.
func CancelOffline(gstin gst.GSTIN, inv Invoice, reason string, at time.Time, position int64, prev []byte) (Invoice, []byte, error) {
	if err := CheckText("reason", reason, false); err != nil {
		return Invoice{}, nil, err
	}
	at = at.UTC().Truncate(time.Microsecond)
	inv.Status, inv.CancelledAt, inv.CancelReason = StatusCancelled, &at, reason
	return inv, CancelRecord(string(gstin), inv, position, prev).Hash(), nil
}
