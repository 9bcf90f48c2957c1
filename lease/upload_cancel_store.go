package lease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"time"
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
// It returns ErrLeaseNotFound or ErrLeaseNotHeld for a lease
// that cannot upload, a *ContinuationError (ErrNotContinuation) naming
// where the chain stands when a position does not continue it,
// ErrNotLeasedInvoice, invoice.ErrPeriodLocked, and document.ErrInvalid naming the first
// bad cancellation and field.
func UploadOfflineCancels(ctx context.Context, b db.Beginner, seller gst.Seller, s gst.Series, leaseID string, cs []OfflineCancel, now time.Time) (UploadResult, error) {
	if len(cs) == 0 || len(cs) > MaxOfflineBatch {
		return UploadResult{}, apperr.Errorf(document.ErrInvalid, "cancels must hold 1 to %d cancellations", MaxOfflineBatch)
	}
	var res UploadResult
	err := db.InTx(ctx, b, func(tx pgx.Tx) error {
		lease, err := WriteAsLeaseTx(ctx, tx, s, leaseID, now)
		if err != nil {
			return err
		}
		u := &cancelUpload{tx: tx, seller: seller, s: s, lease: lease, now: now,
			years: map[gst.FY]*cancelYear{}, done: map[[2]int64]bool{}, write: &pgx.Batch{}}
		if err := u.lockInvoices(ctx, cs); err != nil {
			return err
		}
		for i, c := range cs {
			if err := u.add(ctx, i, c); err != nil {
				return err
			}
		}
		st := u.years[cs[len(cs)-1].FY]
		res = u.res
		res.Next = Position{FY: cs[len(cs)-1].FY, Serial: st.last + 1, ChainLength: st.length, ChainHead: st.head, LastIssuedAt: st.lastIssuedAt}
		if res.Stored == 0 {
			return nil
		}
		return u.store(ctx)
	})
	if err != nil {
		return UploadResult{}, leaseTxFailed(err)
	}
	return res, nil
}

// cancelUpload is an upload of cancellations in progress, inside its
// transaction tx, under lease: the invoices it locked (invs, or errs for
// each one not found), the series-years' chains (years, in the order
// first met), the (fy, serial) pairs it cancelled (done), and the writes
// it queued so far (write), with their events.
type cancelUpload struct {
	tx     pgx.Tx
	seller gst.Seller
	s      gst.Series
	lease  Lease
	now    time.Time
	events *invoice.Events
	invs   []document.Invoice
	errs   []error
	years  map[gst.FY]*cancelYear
	order  []gst.FY
	done   map[[2]int64]bool
	write  *pgx.Batch
	res    UploadResult // its Stored and Replayed counts
}

// lockInvoices reads whether the seller subscribes to invoice.cancelled
// and locks the invoice each of cs cancels, keeping ErrNotFound for a
// serial the server does not hold (add refuses it in turn). It returns
// the translated failure of the read or of a lock.
func (u *cancelUpload) lockInvoices(ctx context.Context, cs []OfflineCancel) error {
	sb := &pgx.Batch{}
	u.events = invoice.QueueSubscribers(sb, u.seller.ID, invoice.EventCancelled)
	if err := u.tx.SendBatch(ctx, sb).Close(); err != nil {
		return translate(err, "read webhooks")
	}
	// One lock order for every cancel path: the invoices first, then
	// the counter rows, as an online cancel (invoice.CancelTx) takes
	// them; the opposite order could deadlock with an online cancel of
	// one of them waiting for the counter.
	u.invs = make([]document.Invoice, len(cs))
	u.errs = make([]error, len(cs))
	for i, c := range cs {
		u.invs[i], u.errs[i] = invoice.LockBySerialTx(ctx, u.tx, u.seller.ID, u.s.ID, c.FY, c.Serial)
		if u.errs[i] != nil && !errors.Is(u.errs[i], invoice.ErrNotFound) {
			return u.errs[i]
		}
	}
	return nil
}

// add verifies cancellation i, c, of the upload: it replays c when it is
// stored already, and otherwise seals it as the server would and queues
// its writes. It fails as UploadOfflineCancels, for c.
func (u *cancelUpload) add(ctx context.Context, i int, c OfflineCancel) error {
	st := u.years[c.FY]
	if st == nil {
		var err error
		if st, err = lockCancelYear(ctx, u.tx, u.s, c.FY); err != nil {
			return err
		}
		u.years[c.FY], u.order = st, append(u.order, c.FY)
	}
	if c.Position <= st.length && !st.touched {
		same, err := cancelStored(ctx, u.tx, u.s, c)
		if err != nil {
			return err
		}
		if same {
			u.res.Replayed++
			return nil
		}
	}
	if c.Position != st.length+1 {
		return &ContinuationError{
			Expected: st.stored,
			err: apperr.Errorf(ErrNotContinuation, "cancels[%d].position %d does not continue the chain of series %s %s, where position %d comes next; nothing was stored: the chain holds %d records (head %x)",
				i, c.Position, u.s.Code, c.FY, st.length+1, st.length, st.head),
		}
	}
	inv := u.invs[i]
	if err := u.check(i, c, st); err != nil {
		return err
	}
	if err := invoice.CheckPeriodTx(ctx, u.tx, inv, u.now); errors.Is(err, invoice.ErrPeriodLocked) {
		return apperr.Errorf(invoice.ErrPeriodLocked, "cancels[%d].serial %d: %s", i, c.Serial, apperr.MessageOf(err))
	} else if err != nil {
		return err
	}
	cancelled, hash, err := document.CancelOffline(u.seller.GSTIN, inv, c.Reason, c.CancelledAt, st.length+1, st.head)
	if err != nil {
		return apperr.Errorf(apperrOf(err), "cancels[%d].%s", i, apperr.MessageOf(err))
	}
	if !bytes.Equal(c.ChainHash, hash) {
		return apperr.Errorf(document.ErrInvalid, "cancels[%d].chain_hash is %x; the server computes %x", i, c.ChainHash, hash)
	}
	at := *cancelled.CancelledAt
	invoice.QueueCancelled(u.write, inv, at, c.Reason, st.length+1, hash)
	cancelled.ID = inv.ID
	u.events.Queue(u.write, []*document.Invoice{&cancelled}, func(*document.Invoice) time.Time { return at })
	st.length, st.head, st.lastAt, st.touched = st.length+1, hash, at, true
	u.done[[2]int64{int64(c.FY), c.Serial}] = true
	u.res.Stored++
	return nil
}

// check returns nil when cancellation i, c, may cancel its invoice in
// chain st: the invoice is stored, not cancelled (nor by this batch),
// under c's number, numbered under the lease, and c's time is not before
// the chain's last record nor after the server's tomorrow.
// ErrNotLeasedInvoice or document.ErrInvalid naming the field otherwise.
func (u *cancelUpload) check(i int, c OfflineCancel, st *cancelYear) error {
	bad := func(field, format string, args ...any) error {
		return apperr.Errorf(document.ErrInvalid, "cancels[%d].%s %s", i, field, fmt.Sprintf(format, args...))
	}
	inv, lease := u.invs[i], u.lease
	switch {
	case u.errs[i] != nil:
		return bad("serial", "%d is not an invoice of series %s %s the server holds", c.Serial, u.s.Code, c.FY)
	case inv.Status == document.StatusCancelled || u.done[[2]int64{int64(c.FY), c.Serial}]:
		return bad("serial", "%d: invoice %s was already cancelled", c.Serial, inv.Number)
	case c.Number != inv.Number:
		return bad("number", "is %s; serial %d is %s", c.Number, c.Serial, inv.Number)
	case !numberedUnder(lease, inv):
		return apperr.Errorf(ErrNotLeasedInvoice, "cancels[%d].serial %d: invoice %s was issued at %s, not under lease %s (from serial %d of %s, %s): cancel it online after the lease ends",
			i, c.Serial, inv.Number, document.Timestamp(inv.IssuedAt), lease.ID, lease.Next.Serial, lease.StartFY(), document.Timestamp(lease.LeasedAt))
	case c.CancelledAt.Before(st.lastAt):
		return bad("cancelled_at", "%s is before %s, the chain's last record's", document.Timestamp(c.CancelledAt), document.Timestamp(st.lastAt))
	case gst.DateIST(c.CancelledAt).After(gst.DateIST(u.now).AddDate(0, 0, 1)):
		return bad("cancelled_at", "%s is in the future", document.Timestamp(c.CancelledAt))
	}
	return nil
}

// store queues the advance of the chains the upload touched, after its
// cancels, and sends them all.
func (u *cancelUpload) store(ctx context.Context) error {
	var sellers, ids []int64
	var fys []int32
	var lengths []int64
	var heads [][]byte
	for _, y := range u.order {
		if st := u.years[y]; st.touched {
			sellers, ids, fys, lengths, heads = append(sellers, u.seller.ID), append(ids, u.s.ID), append(fys, int32(y)), append(lengths, st.length), append(heads, st.head)
		}
	}
	series.QueueAdvanceChains(u.write, sellers, ids, fys, lengths, heads)
	return translate(u.tx.SendBatch(ctx, u.write).Close(), "store offline cancellations")
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

// numberedUnder reports whether inv was numbered under lease l: at or
// after the serial and year the lease started from, and not issued before
// it was taken.
func numberedUnder(l Lease, inv document.Invoice) bool {
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
