package invoice

import (
	"context"
	"errors"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL of cancelling an invoice.

// Cancel cancels an invoice in its own transaction; see CancelTx. It also
// returns ErrOutcomeUnknown when the COMMIT's answer was lost.
func Cancel(ctx context.Context, b db.Beginner, seller gst.Seller, id int64, reason string, now time.Time, opt series.Options) (document.Invoice, error) {
	inv, _, err := CancelOnce(ctx, b, seller, CancelRequest{ID: id, Reason: reason}, now, opt)
	return inv, err
}

// CancelRequest is a cancellation as asked for: the invoice, the reason
// and, optionally, the request's Idempotency-Key with the fingerprint of
// the request (see Draft).
type CancelRequest struct {
	ID             int64
	Reason         string
	IdempotencyKey string
	RequestHash    []byte
}

// CancelOnce cancels the seller's invoice req.ID in its own transaction
// (see CancelTx) and returns it. With an idempotency key, the key is
// claimed first and recorded with the cancellation in the same
// transaction: a key that already answered an identical request returns
// that invoice as it is now with replayed set (the answer of a cancel is
// final: a cancelled invoice never changes again), a key held by another
// transaction ErrKeyInProgress, a key used for another request
// ErrKeyReused. Other errors are CancelTx's, and ErrOutcomeUnknown when
// the COMMIT's answer was lost.
func CancelOnce(ctx context.Context, b db.Beginner, seller gst.Seller, req CancelRequest, now time.Time, opt series.Options) (inv document.Invoice, replayed bool, err error) {
	err = db.InTx(ctx, b, func(tx pgx.Tx) error {
		if req.IdempotencyKey != "" {
			id, err := ClaimKey(ctx, tx, seller.ID, req.IdempotencyKey, req.RequestHash)
			if err != nil {
				return err
			}
			if id != 0 {
				if inv, err = Get(ctx, tx, seller.ID, id); err != nil {
					return err
				}
				return errReplayed // it only read: roll back
			}
		}
		if inv, err = CancelTx(ctx, tx, seller, req.ID, req.Reason, now, opt); err != nil {
			return err
		}
		if req.IdempotencyKey != "" {
			if _, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (seller_id, key, request_hash, invoice_id) VALUES ($1, $2, $3, $4)`,
				seller.ID, req.IdempotencyKey, req.RequestHash, inv.ID); err != nil {
				return translate(err, "record idempotency key")
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, errReplayed):
		return inv, true, nil
	case err != nil:
		return document.Invoice{}, false, txFailed(err)
	}
	return inv, false, nil
}

// errReplayed ends CancelOnce's transaction when its key answered already.
var errReplayed = errors.New("invoice: replayed")

// CancelTx marks the seller's invoice id cancelled with reason and appends a
// cancellation record to its series-year's chain, under the counter lock.
// The number stays used; nothing is deleted. It returns document.ErrInvalid for an
// empty or overlong reason, ErrNotFound, ErrAlreadyCancelled,
// ErrPeriodLocked when the invoice's month is locked, and
// series.ErrLockTimeout when the invoice row or the counter stays locked
// past opt.LockTimeout.
func CancelTx(ctx context.Context, tx pgx.Tx, seller gst.Seller, id int64, reason string, now time.Time, opt series.Options) (document.Invoice, error) {
	if err := document.CheckText("reason", reason, false); err != nil {
		return document.Invoice{}, err
	}
	var inv document.Invoice
	subscribed := map[int64]bool{}
	lock := &pgx.Batch{}
	queueSubscribed(lock, []int64{seller.ID}, EventCancelled, subscribed)
	series.QueueLockTimeout(lock, opt)
	lock.Queue(`SELECT `+invoiceCols+invoiceFrom+`WHERE i.id = $1 AND i.seller_id = $2 FOR UPDATE OF i`, id, seller.ID).
		QueryRow(func(row pgx.Row) (err error) { inv, err = scanInvoice(row); return err })
	series.QueueLockTimeoutRestore(lock, opt)
	if err := tx.SendBatch(ctx, lock).Close(); errors.Is(err, pgx.ErrNoRows) {
		return document.Invoice{}, ErrNotFound
	} else if err != nil {
		return document.Invoice{}, translate(err, "lock invoice")
	}
	if inv.Status == document.StatusCancelled {
		return document.Invoice{}, apperr.Errorf(ErrAlreadyCancelled, "invoice %s was already cancelled", inv.Number)
	}
	length, head, err := series.LockChain(ctx, tx, seller.ID, inv.SeriesID, inv.FY, opt)
	if err != nil {
		return document.Invoice{}, err
	}
	if err := CheckPeriodTx(ctx, tx, inv, now); err != nil {
		return document.Invoice{}, err
	}
	at := now.UTC().Truncate(time.Microsecond)
	inv.Status, inv.CancelledAt, inv.CancelReason = document.StatusCancelled, &at, reason
	rec := document.CancelRecord(string(seller.GSTIN), inv, length+1, head)
	hash := rec.Hash()
	batch := &pgx.Batch{}
	QueueCancelled(batch, inv, at, reason, length+1, hash)
	series.QueueAdvanceChains(batch, []int64{seller.ID}, []int64{inv.SeriesID}, []int32{int32(inv.FY)}, []int64{length + 1}, [][]byte{hash})
	queueEvents(batch, []*document.Invoice{&inv}, EventCancelled, func(*document.Invoice) time.Time { return at }, subscribed)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return document.Invoice{}, translate(err, "cancel invoice")
	}
	return inv, nil
}
