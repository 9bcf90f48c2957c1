package invoice

import (
	"bytes"
	"context"
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

// This file holds the SQL of storing cancellations a device made offline
// (docs/offline.md).

// cancelYear is a series-year's chain as a cancel upload advances it.
type cancelYear struct {
	*yearState
	lastAt time.Time // recorded time of the chain's last record
}

// UploadOfflineCancels stores cs, cancellations made offline by the device
// holding lease leaseID of series s, if and only if the whole batch
// continues the chains: cancellations already stored identically (a
// cancel record at the same position with the same hash) are replayed,
// and each new one must take the next position of its series-year's
// chain, cancel an invoice of that series-year that is stored and not
// cancelled, under its number, at a time not before the chain's last
// record nor after the server's tomorrow, with the reason rules of an
// online cancel and the chain hash the server computes (document.CancelOffline);
// the invoice must have been numbered under the lease and its month must
// not be locked when the upload arrives. Nothing is stored otherwise.
// Each stored cancellation marks the invoice
// cancelled and queues its invoice.cancelled event, as an online one.
//
// It returns series.ErrLeaseNotFound or series.ErrLeaseNotHeld for a lease
// that cannot upload, a *ContinuationError (ErrNotContinuation) naming
// where the chain stands when a position does not continue it,
// ErrNotLeasedInvoice, ErrPeriodLocked, and document.ErrInvalid naming the first
// bad cancellation and field.
func UploadOfflineCancels(ctx context.Context, b db.Beginner, seller gst.Seller, s gst.Series, leaseID string, cs []OfflineCancel, now time.Time) (UploadResult, error) {
	if len(cs) == 0 || len(cs) > MaxOfflineBatch {
		return UploadResult{}, apperr.Errorf(document.ErrInvalid, "cancels must hold 1 to %d cancellations", MaxOfflineBatch)
	}
	var res UploadResult
	err := db.InTx(ctx, b, func(tx pgx.Tx) error {
		lease, err := series.WriteAsLeaseTx(ctx, tx, s, leaseID, now)
		if err != nil {
			return err
		}
		subscribed := map[int64]bool{}
		sb := &pgx.Batch{}
		queueSubscribed(sb, []int64{seller.ID}, EventCancelled, subscribed)
		if err := tx.SendBatch(ctx, sb).Close(); err != nil {
			return translate(err, "read webhooks")
		}
		// One lock order for every cancel path: the invoices first, then
		// the counter rows, as an online cancel (CancelTx) takes them; the
		// opposite order could deadlock with an online cancel of one of
		// them waiting for the counter.
		invs := make([]document.Invoice, len(cs))
		errs := make([]error, len(cs))
		for i, c := range cs {
			invs[i], errs[i] = lockInvoiceBySerial(ctx, tx, seller.ID, s.ID, c.FY, c.Serial)
			if errs[i] != nil && !errors.Is(errs[i], ErrNotFound) {
				return errs[i]
			}
		}
		years := map[gst.FY]*cancelYear{}
		done := map[[2]int64]bool{} // (fy, serial) cancelled by this batch
		var order []gst.FY
		write := &pgx.Batch{}
		var st *cancelYear
		for i, c := range cs {
			bad := func(field, format string, args ...any) error {
				return apperr.Errorf(document.ErrInvalid, "cancels[%d].%s %s", i, field, fmt.Sprintf(format, args...))
			}
			if st = years[c.FY]; st == nil {
				var err error
				if st, err = lockCancelYear(ctx, tx, s, c.FY); err != nil {
					return err
				}
				years[c.FY], order = st, append(order, c.FY)
			}
			if c.Position <= st.length && !st.touched {
				same, err := cancelStored(ctx, tx, s, c)
				if err != nil {
					return err
				}
				if same {
					res.Replayed++
					continue
				}
			}
			if c.Position != st.length+1 {
				return &ContinuationError{
					Expected: st.stored,
					err: apperr.Errorf(ErrNotContinuation, "cancels[%d].position %d does not continue the chain of series %s %s, where position %d comes next; nothing was stored: the chain holds %d records (head %x)",
						i, c.Position, s.Code, c.FY, st.length+1, st.length, st.head),
				}
			}
			inv := invs[i]
			switch {
			case errs[i] != nil:
				return bad("serial", "%d is not an invoice of series %s %s the server holds", c.Serial, s.Code, c.FY)
			case inv.Status == document.StatusCancelled || done[[2]int64{int64(c.FY), c.Serial}]:
				return bad("serial", "%d: invoice %s was already cancelled", c.Serial, inv.Number)
			case c.Number != inv.Number:
				return bad("number", "is %s; serial %d is %s", c.Number, c.Serial, inv.Number)
			case !numberedUnder(lease, inv):
				return apperr.Errorf(ErrNotLeasedInvoice, "cancels[%d].serial %d: invoice %s was issued at %s, not under lease %s (from serial %d of %s, %s): cancel it online after the lease ends",
					i, c.Serial, inv.Number, document.Timestamp(inv.IssuedAt), lease.ID, lease.Next.Serial, lease.StartFY(), document.Timestamp(lease.LeasedAt))
			case c.CancelledAt.Before(st.lastAt):
				return bad("cancelled_at", "%s is before %s, the chain's last record's", document.Timestamp(c.CancelledAt), document.Timestamp(st.lastAt))
			case gst.DateIST(c.CancelledAt).After(gst.DateIST(now).AddDate(0, 0, 1)):
				return bad("cancelled_at", "%s is in the future", document.Timestamp(c.CancelledAt))
			}
			if err := checkPeriodTx(ctx, tx, inv, now); errors.Is(err, ErrPeriodLocked) {
				return apperr.Errorf(ErrPeriodLocked, "cancels[%d].serial %d: %s", i, c.Serial, apperr.MessageOf(err))
			} else if err != nil {
				return err
			}
			cancelled, hash, err := document.CancelOffline(seller.GSTIN, inv, c.Reason, c.CancelledAt, st.length+1, st.head)
			if err != nil {
				return apperr.Errorf(apperrOf(err), "cancels[%d].%s", i, apperr.MessageOf(err))
			}
			if !bytes.Equal(c.ChainHash, hash) {
				return bad("chain_hash", "is %x; the server computes %x", c.ChainHash, hash)
			}
			at := *cancelled.CancelledAt
			write.Queue(`UPDATE invoices SET status = 'cancelled', cancelled_at = $2, cancel_reason = $3 WHERE id = $1 AND seller_id = $4`, inv.ID, at, c.Reason, seller.ID)
			write.Queue(`INSERT INTO chain_records (series_id, fy, position, kind, serial, recorded_at, hash, seller_id) VALUES ($1, $2, $3, 'cancel', $4, $5, $6, $7)`,
				s.ID, int(c.FY), st.length+1, inv.Serial, at, hash, seller.ID)
			cancelled.ID = inv.ID
			queueEvents(write, []*document.Invoice{&cancelled}, EventCancelled, func(*document.Invoice) time.Time { return at }, subscribed)
			st.length, st.head, st.lastAt, st.touched = st.length+1, hash, at, true
			done[[2]int64{int64(c.FY), c.Serial}] = true
			res.Stored++
		}
		res.Next = series.Position{FY: cs[len(cs)-1].FY, Serial: st.last + 1, ChainLength: st.length, ChainHead: st.head, LastIssuedAt: st.lastIssuedAt}
		if res.Stored == 0 {
			return nil
		}
		var sellers, ids []int64
		var fys []int32
		var lengths []int64
		var heads [][]byte
		for _, y := range order {
			if st := years[y]; st.touched {
				sellers, ids, fys, lengths, heads = append(sellers, seller.ID), append(ids, s.ID), append(fys, int32(y)), append(lengths, st.length), append(heads, st.head)
			}
		}
		series.QueueAdvanceChains(write, sellers, ids, fys, lengths, heads)
		return translate(tx.SendBatch(ctx, write).Close(), "store offline cancellations")
	})
	if err != nil {
		return UploadResult{}, txFailed(err)
	}
	return res, nil
}

// lockCancelYear locks the counter row of (s, fy) and returns its state
// with the recorded time of the chain's last record.
func lockCancelYear(ctx context.Context, tx pgx.Tx, s gst.Series, fy gst.FY) (*cancelYear, error) {
	st, err := lockYear(ctx, tx, s, fy)
	if err != nil {
		return nil, err
	}
	y := &cancelYear{yearState: st}
	if st.length == 0 {
		return y, nil
	}
	err = tx.QueryRow(ctx, `SELECT recorded_at FROM chain_records WHERE series_id = $1 AND fy = $2 AND position = $3 AND seller_id = $4`,
		s.ID, int(fy), st.length, s.SellerID).Scan(&y.lastAt)
	if err != nil {
		return nil, translate(err, "read last record")
	}
	return y, nil
}

// lockInvoiceBySerial locks and returns the seller's invoice serial of
// series seriesID in fy; ErrNotFound when there is none.
func lockInvoiceBySerial(ctx context.Context, tx pgx.Tx, sellerID, seriesID int64, fy gst.FY, serial int64) (document.Invoice, error) {
	inv, err := scanInvoice(tx.QueryRow(ctx, `SELECT `+invoiceCols+invoiceFrom+`WHERE i.seller_id = $1 AND i.series_id = $2 AND i.fy = $3 AND i.serial = $4 FOR UPDATE OF i`,
		sellerID, seriesID, int(fy), serial))
	if errors.Is(err, pgx.ErrNoRows) {
		return document.Invoice{}, ErrNotFound
	}
	if err != nil {
		return document.Invoice{}, translate(err, "lock invoice")
	}
	return inv, nil
}

// numberedUnder reports whether inv was numbered under lease l: at or
// after the serial and year the lease started from, and not issued before
// it was taken.
func numberedUnder(l series.Lease, inv document.Invoice) bool {
	if inv.FY < l.StartFY() || (inv.FY == l.StartFY() && inv.Serial < l.Next.Serial) {
		return false
	}
	return !inv.IssuedAt.Before(l.LeasedAt)
}

// cancelStored reports whether c is stored already: the record at its
// position is a cancel of its serial with its hash.
func cancelStored(ctx context.Context, tx pgx.Tx, s gst.Series, c OfflineCancel) (bool, error) {
	var h []byte
	err := tx.QueryRow(ctx, `SELECT hash FROM chain_records WHERE series_id = $1 AND fy = $2 AND position = $3 AND kind = 'cancel' AND serial = $4 AND seller_id = $5`,
		s.ID, int(c.FY), c.Position, c.Serial, s.SellerID).Scan(&h)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, translate(err, "read record")
	}
	return bytes.Equal(h, c.ChainHash), nil
}
