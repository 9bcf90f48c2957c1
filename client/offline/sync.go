package offline

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/gst"
)

// This file holds uploading: Sync and Run send the pending invoices and
// cancellations in the chain's order, and markUploaded drops what the
// server holds.

// markUploaded drops from the pending records the invoices of fy through
// serial through, or (cancels) its cancellations through chain position
// through.
func (t *Terminal) markUploaded(fy gst.FY, cancels bool, through int64) {
	if !cancels {
		t.year(fy).uploaded = through
	}
	kept := t.queue[:0]
	for _, p := range t.queue {
		switch {
		case p.fy != fy || (p.cancel != nil) != cancels:
		case !cancels && p.inv.Serial <= through, cancels && p.cancel.Position <= through:
			continue
		}
		kept = append(kept, p)
	}
	t.queue = kept
}

// nextRun returns the next upload from the head of t's queue, at most
// limit records (and the batch size t has learnt): the longest run of one
// kind (invoices or cancels) and one series-year, and that year. The
// pending records are in chain order, so a cancellation goes after the
// invoice it cancels, and marks stay simple. It is called with t.mu held;
// an empty queue gives empty slices.
func (t *Terminal) nextRun(limit int) (batch []client.DeviceInvoice, cancels []client.DeviceCancel, fy gst.FY) {
	n := min(len(t.queue), t.batch, limit)
	for i, p := range t.queue[:n] {
		if i > 0 && (p.fy != fy || (p.cancel != nil) != (cancels != nil)) {
			break
		}
		fy = p.fy
		if p.cancel != nil {
			cancels = append(cancels, *p.cancel)
		} else {
			batch = append(batch, p.inv)
		}
	}
	return batch, cancels, fy
}

// Sync uploads every pending invoice and cancellation through cl, in
// batches in the chain's order, and returns how many the server newly
// stored. The client retries what has no answer; an upload is idempotent,
// so a batch whose answer was lost is replayed. A batch refused as too
// large (413 body_too_large: its body is past the server's limit; 429
// over_rate_limit: more records than the server's --rate-limit lets one
// request carry) is halved and sent again, down to one record, and later
// batches keep the smaller size. A run of cancellations refused 409
// period_locked is halved likewise until the refused one is found alone;
// that one is voided (void.go: the invoice stands, the records after it
// are chained again) and the rest uploads; Sync then fails with a
// *CancelsRefusedError naming it.
//
// When the server refuses an upload as not under the lease (409
// lease_not_held, 404 lease_not_found), Sync journals a "doubt" (Issue and
// Cancel fail with ErrLeaseInDoubt from then on) and resumes the lease
// (learnLease): when it has ended and is settled, Sync journals the end
// (Issue fails with ErrEnded) and fails with a *NotUploadedError listing
// what was never uploaded; when it holds, selling goes on and Sync fails
// with the refusal; when the resume has no answer (or 404), the doubt
// stays, across a restart too, and Sync fails with an error wrapping
// ErrLeaseInDoubt: the next Sync resumes first. It fails otherwise with
// the client's errors (a *client.ContinuationError when the server's
// series does not continue where the terminal's does).
func (t *Terminal) Sync(ctx context.Context, cl *client.Client) (int, error) {
	stored := 0
	t.mu.Lock()
	doubt := t.doubt
	t.mu.Unlock()
	if doubt {
		if err := t.learnLease(ctx, cl, nil); err != nil {
			return stored, err
		}
	}
	var refused []RefusedCancel
	locked := maxBatch // the batch a period_locked refusal was halved to
	for {
		t.mu.Lock()
		if t.broken {
			t.mu.Unlock()
			return stored, ErrBroken
		}
		batch, cancels, fy := t.nextRun(locked)
		t.mu.Unlock()
		if len(batch) == 0 && len(cancels) == 0 {
			if len(refused) > 0 {
				return stored, &CancelsRefusedError{Cancels: refused}
			}
			return stored, nil
		}
		var res client.UploadResult
		var err error
		mark := record{Kind: "up", FY: fy.String()}
		if cancels != nil {
			res, err = cl.UploadDeviceCancels(ctx, t.lease.Series, t.lease.LeaseID, cancels)
			mark.Kind, mark.Through = "upc", cancels[len(cancels)-1].Position
		} else {
			res, err = cl.UploadDeviceInvoices(ctx, t.lease.Series, t.lease.LeaseID, batch)
			mark.Through = batch[len(batch)-1].Serial
		}
		sent := len(batch) + len(cancels)
		var ce *client.Error
		switch {
		case errors.As(err, &ce) && (ce.Code == client.CodeOverRateLimit || ce.Status == http.StatusRequestEntityTooLarge) && sent > 1:
			t.mu.Lock()
			t.batch = max(1, sent/2)
			t.mu.Unlock()
			continue
		case errors.As(err, &ce) && ce.Code == client.CodePeriodLocked && cancels != nil && sent > 1:
			locked = max(1, sent/2)
			continue
		case errors.As(err, &ce) && ce.Code == client.CodePeriodLocked && cancels != nil:
			t.mu.Lock()
			r, err := t.void(fy, cancels[0].Position, ce.Message)
			t.mu.Unlock()
			if err != nil {
				return stored, err
			}
			refused = append(refused, r)
			continue
		case errors.As(err, &ce) && (ce.Code == client.CodeLeaseNotHeld || ce.Code == client.CodeLeaseNotFound):
			return stored, t.refused(ctx, cl, err)
		case err != nil:
			return stored, err
		}
		stored += res.Stored
		t.mu.Lock()
		err = t.write(mark)
		if err == nil {
			t.markUploaded(fy, cancels != nil, mark.Through)
		}
		t.mu.Unlock()
		if err != nil {
			return stored, err
		}
	}
}

// Run syncs every interval until ctx ends, and reports each failed sync
// to onError (nil: ignored); the next tick tries again.
func (t *Terminal) Run(ctx context.Context, cl *client.Client, interval time.Duration, onError func(error)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if _, err := t.Sync(ctx, cl); err != nil && onError != nil && ctx.Err() == nil {
			onError(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
