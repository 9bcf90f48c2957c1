package invoice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
)

// MaxOfflineBatch is the most invoices one upload may hold.
const MaxOfflineBatch = 1000

// UploadResult is what an upload stored: Stored new invoices, Replayed
// ones already stored identically, and where the series-year of the last
// invoice now stands.
type UploadResult struct {
	Stored   int
	Replayed int
	Next     series.Position
}

// yearState is a series-year's counter as the upload advances it.
type yearState struct {
	last         int64
	lastDate     time.Time
	lastIssuedAt time.Time
	length       int64
	head         []byte
	touched      bool
	stored       series.Position // where the year stood before the upload
}

// UploadOffline stores invs, numbered offline by the device holding lease
// leaseID of series s, if and only if the whole batch continues the
// series: invoices already stored identically (same serial and chain
// hash) are replayed, and each new one must carry the next serial of its
// series-year, the number the format renders for it, an invoice date and
// issue time not before the previous invoice's nor before the lease was
// taken (in a financial year the lease reserves), the amounts and the
// chain hash the server computes (document.NumberOffline). Nothing is stored
// otherwise.
//
// It returns series.ErrLeaseNotFound or series.ErrLeaseNotHeld for a lease
// that cannot upload, a *ContinuationError (ErrNotContinuation) naming
// the expected next serial and chain head when a serial does not
// continue, ErrYearBeforeLease, ErrYearAfterLease and
// ErrIssuedBeforeLease, and document.ErrInvalid (or the errors of document.PrepareContent) naming the
// first bad invoice and field.
func UploadOffline(ctx context.Context, b db.Beginner, seller gst.Seller, s gst.Series, leaseID string, invs []OfflineInvoice, now time.Time) (UploadResult, error) {
	if len(invs) == 0 || len(invs) > MaxOfflineBatch {
		return UploadResult{}, apperr.Errorf(document.ErrInvalid, "invoices must hold 1 to %d invoices", MaxOfflineBatch)
	}
	var res UploadResult
	err := db.InTx(ctx, b, func(tx pgx.Tx) error {
		lease, err := series.WriteAsLeaseTx(ctx, tx, s, leaseID, now)
		if err != nil {
			return err
		}
		years := map[gst.FY]*yearState{}
		var fy gst.FY
		var st *yearState
		var rows []document.Invoice
		var hashes [][]byte
		var positions []int64
		for i, o := range invs {
			y := gst.FYOf(o.Request.InvoiceDate)
			if !y.Valid() {
				return apperr.Errorf(gst.ErrInvalidDate, "invoices[%d].invoice_date %s is outside the supported financial years", i, o.Request.InvoiceDate.Format(time.DateOnly))
			}
			if y < lease.StartFY() {
				return apperr.Errorf(ErrYearBeforeLease, "invoices[%d].invoice_date %s is in %s, before %s, the year lease %s started in", i, o.Request.InvoiceDate.Format(time.DateOnly), y, lease.StartFY(), lease.ID)
			}
			if !lease.Reserves(y) {
				years := lease.Years()
				return apperr.Errorf(ErrYearAfterLease, "invoices[%d].invoice_date %s is in %s; lease %s reserves %s and %s only", i, o.Request.InvoiceDate.Format(time.DateOnly), y, lease.ID, years[0], years[len(years)-1])
			}
			if st == nil || y != fy {
				if st != nil && y < fy {
					return apperr.Errorf(document.ErrInvalid, "invoices[%d].invoice_date %s goes back to %s after an invoice of %s", i, o.Request.InvoiceDate.Format(time.DateOnly), y, fy)
				}
				var err error
				if st, err = lockYear(ctx, tx, s, y); err != nil {
					return err
				}
				fy, years[y] = y, st
			}
			if o.Serial <= st.last && !st.touched {
				same, err := storedSame(ctx, tx, s, y, o)
				if err != nil {
					return err
				}
				if same {
					res.Replayed++
					continue
				}
			}
			if o.Serial != st.last+1 {
				return &ContinuationError{
					Expected: st.stored,
					err: apperr.Errorf(ErrNotContinuation, "invoices[%d].serial %d does not continue series %s %s, where serial %d comes next; nothing was stored: the series holds serials up to %d (chain head %x)",
						i, o.Serial, s.Code, y, st.last+1, st.stored.Serial-1, st.stored.ChainHead),
				}
			}
			if o.Request.InvoiceDate.Before(st.lastDate) {
				return apperr.Errorf(document.ErrInvalid, "invoices[%d].invoice_date %s is before %s, the previous invoice's", i, o.Request.InvoiceDate.Format(time.DateOnly), st.lastDate.Format(time.DateOnly))
			}
			if o.IssuedAt.Before(st.lastIssuedAt) {
				return apperr.Errorf(document.ErrInvalid, "invoices[%d].issued_at %s is before %s, the previous invoice's", i, document.Timestamp(o.IssuedAt), document.Timestamp(st.lastIssuedAt))
			}
			if o.IssuedAt.Before(lease.LeasedAt) {
				return apperr.Errorf(ErrIssuedBeforeLease, "invoices[%d].issued_at %s is before %s, when lease %s was taken", i, document.Timestamp(o.IssuedAt), document.Timestamp(lease.LeasedAt), lease.ID)
			}
			if o.Request.InvoiceDate.After(gst.DateIST(now).AddDate(0, 0, 1)) {
				return apperr.Errorf(document.ErrInvalid, "invoices[%d].invoice_date %s is in the future", i, o.Request.InvoiceDate.Format(time.DateOnly))
			}
			inv, hash, err := document.NumberOffline(seller, s, o.Request, o.Serial, st.length+1, st.head, o.IssuedAt)
			if err != nil {
				return apperr.Errorf(apperrOf(err), "invoices[%d]: %s", i, apperr.MessageOf(err))
			}
			if err := checkOffline(i, o, inv, hash); err != nil {
				return err
			}
			inv.PublicID = document.NewPublicID(seller.ID, inv.IssuedAt)
			rows, hashes, positions = append(rows, inv), append(hashes, hash), append(positions, st.length+1)
			st.last, st.lastDate, st.lastIssuedAt, st.length, st.head, st.touched = o.Serial, inv.InvoiceDate, inv.IssuedAt, st.length+1, hash, true
		}
		res.Stored = len(rows)
		res.Next = series.Position{FY: fy, Serial: st.last + 1, ChainLength: st.length, ChainHead: st.head, LastIssuedAt: st.lastIssuedAt}
		if len(rows) == 0 {
			return nil
		}
		return writeOffline(ctx, tx, seller, s, rows, hashes, positions, years)
	})
	if err != nil {
		return UploadResult{}, txFailed(err)
	}
	return res, nil
}

// apperrOf returns the sentinel-like coded error of err, document.ErrInvalid when it
// has none, so that an upload's message can name the invoice.
func apperrOf(err error) *apperr.Error {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae
	}
	return document.ErrInvalid
}

// lockYear locks the counter row of (s, fy), when there is one, and
// returns its state.
func lockYear(ctx context.Context, tx pgx.Tx, s gst.Series, fy gst.FY) (*yearState, error) {
	st := &yearState{stored: series.Position{FY: fy, Serial: 1}}
	err := tx.QueryRow(ctx, `SELECT last_serial, last_invoice_date, last_issued_at, chain_length, chain_head
		FROM series_counters WHERE series_id = $1 AND fy = $2 AND seller_id = $3 FOR UPDATE`, s.ID, int(fy), s.SellerID).
		Scan(&st.last, &st.lastDate, &st.lastIssuedAt, &st.length, &st.head)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return st, nil
	case err != nil:
		return nil, translate(err, "lock counter")
	}
	st.stored = series.Position{FY: fy, Serial: st.last + 1, ChainLength: st.length, ChainHead: st.head, LastIssuedAt: st.lastIssuedAt}
	return st, nil
}

// storedSame reports whether o is stored already: its serial's issue
// record has o's chain hash (which seals every field).
func storedSame(ctx context.Context, tx pgx.Tx, s gst.Series, fy gst.FY, o OfflineInvoice) (bool, error) {
	var h []byte
	err := tx.QueryRow(ctx, `SELECT hash FROM chain_records WHERE series_id = $1 AND fy = $2 AND serial = $3 AND kind = 'issue' AND seller_id = $4`,
		s.ID, int(fy), o.Serial, s.SellerID).Scan(&h)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, translate(err, "read record")
	}
	return bytes.Equal(h, o.ChainHash), nil
}

// writeOffline inserts the verified invoices and their issue records and
// advances the counter rows of years, in one round trip, and records their
// events in a second when the seller subscribes.
func writeOffline(ctx context.Context, tx pgx.Tx, seller gst.Seller, s gst.Series, rows []document.Invoice, hashes [][]byte, positions []int64, years map[gst.FY]*yearState) error {
	b := &pgx.Batch{}
	for y, st := range years {
		if !st.touched {
			continue
		}
		b.Queue(`INSERT INTO series_counters AS c (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at, chain_length, chain_head)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (series_id, fy, seller_id) DO UPDATE SET last_serial = EXCLUDED.last_serial,
				last_invoice_date = EXCLUDED.last_invoice_date, last_issued_at = EXCLUDED.last_issued_at,
				chain_length = EXCLUDED.chain_length, chain_head = EXCLUDED.chain_head`,
			s.ID, int(y), seller.ID, st.last, s.Format.Capacity(), st.lastDate, st.lastIssuedAt, st.length, st.head)
	}
	for i := range rows {
		inv := &rows[i]
		items, err := json.Marshal(inv.Items)
		if err != nil {
			return fmt.Errorf("invoice: items: %w", err)
		}
		sl := &document.Sealed{ItemsJSON: string(items), Money: document.MoneyOf(inv.Totals)}
		if sl.BuyerAddress, sl.ShipTo, err = document.AddressesJSON(inv.Buyer, inv.ShipTo); err != nil {
			return err
		}
		r := invoiceRowOf(inv, sl)
		b.Queue(invoiceOneSQL, invoiceValues.values(&r)...).QueryRow(func(row pgx.Row) error {
			return row.Scan(&inv.ID)
		})
		c := chainRow{sellerID: seller.ID, seriesID: s.ID, fy: int32(inv.FY), position: positions[i], serial: inv.Serial, at: inv.IssuedAt, hash: hashes[i]}
		b.Queue(chainOneSQL, chainValues.values(&c)...)
	}
	subscribed := map[int64]bool{}
	queueSubscribed(b, []int64{seller.ID}, EventIssued, subscribed)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return translate(err, "store offline invoices")
	}
	// The events need the invoices' ids: a round trip of their own, only
	// when the seller subscribes (routed_store.go says why not a CTE).
	events := &pgx.Batch{}
	all := make([]*document.Invoice, len(rows))
	for i := range rows {
		all[i] = &rows[i]
	}
	if !queueEvents(events, all, EventIssued, func(inv *document.Invoice) time.Time { return inv.IssuedAt }, subscribed) {
		return nil
	}
	return translate(tx.SendBatch(ctx, events).Close(), "record offline invoices' events")
}
