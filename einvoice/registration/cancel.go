package registration

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/irp"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/textcut"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Canceller cancels invoices for the API, their IRNs first when they have
// one live (docs/e-invoice.md, "Cancel").
type Canceller struct {
	pool      *pgxpool.Pool
	registrar einvoice.Registrar // nil: no IRP configured
	opt       series.Options
	lease     time.Duration
}

// NewCanceller returns a Canceller over pool that cancels IRNs through
// registrar (nil when the server has no IRP configured: an invoice with a
// live IRN is then refused ErrNotConfigured), cancelling invoices with opt.
// timeout is the registrar's longest wait for an answer (0:
// irp.DefaultTimeout); the invoice's registration is held for it and 30s
// while the IRP is asked.
func NewCanceller(pool *pgxpool.Pool, registrar einvoice.Registrar, opt series.Options, timeout time.Duration) *Canceller {
	return &Canceller{pool: pool, registrar: registrar, opt: opt, lease: cmp.Or(timeout, irp.DefaultTimeout) + 30*time.Second}
}

// CancelRequest is a cancel as the API asks it: the invoice's (reason,
// idempotency key) and the IRP's reason code for its IRN.
type CancelRequest struct {
	invoice.CancelRequest
	// Code is the IRP's reason (CnlRsn) when the invoice's IRN is
	// cancelled; 0 means einvoice.CancelOther. The remark sent is the
	// reason, cut to 100 characters.
	Code einvoice.CancelReason
}

// Cancel cancels the seller's invoice req.ID as invoice.CancelOnce does
// and returns it with its registration, replayed when req's idempotency
// key answered before. Its IRN, when registered, is cancelled at the IRP
// first, and the invoice only once the IRP has cancelled it:
//
//   - registered more than 24 hours ago: ErrCancelWindowClosed (the IRP
//     cancels no IRN after einvoice.CancelWindow; a credit note corrects
//     the invoice), and likewise when the IRP says so (2270);
//   - an active e-way bill on the IRN (2230): ErrEWayBillActive;
//   - no answer, or credentials refused: ErrIRPUnavailable. The cancel is
//     recorded as asked: the IRP workers ask again and then cancel the
//     invoice, and a retry of the request does the same;
//   - a worker settling the registration right now: ErrBusy.
//
// An invoice whose registration is pending is cancelled at once; the IRP
// workers then cancel the IRN if one was registered (Code is kept for
// them). Other errors are invoice.CancelOnce's, ErrNotConfigured,
// invoice.ErrPeriodLocked (checked before the IRP is asked) and the
// database's.
func (c *Canceller) Cancel(ctx context.Context, seller gst.Seller, req CancelRequest, now time.Time) (document.Invoice, bool, error) {
	code := req.Code
	if code == 0 {
		code = einvoice.CancelOther
	}
	if !code.Valid() {
		return document.Invoice{}, false, apperr.Errorf(document.ErrInvalid, "e_invoice_reason must be one of duplicate, data_entry_mistake, order_cancelled, other")
	}
	if err := document.CheckText("reason", req.Reason, false); err != nil {
		return document.Invoice{}, false, err
	}
	inv, err := invoice.Get(ctx, c.pool, seller.ID, req.ID)
	if err != nil {
		return document.Invoice{}, false, err
	}
	ask := cancelAsk{code: code, remark: remarkOf(req.Reason), reason: req.Reason}
	switch {
	case inv.Status == document.StatusCancelled:
		// A replay, or already cancelled: CancelOnce answers which.
	case inv.EInvoice.Status == einvoice.StatusRegistered:
		if err := c.cancelIRN(ctx, seller, inv, ask, now); err != nil {
			return document.Invoice{}, false, err
		}
	case inv.EInvoice.Status == einvoice.StatusPending:
		out, replayed, err := invoice.CancelOnce(ctx, c.pool, seller, req.CancelRequest, now, c.opt)
		if err != nil {
			return document.Invoice{}, false, err
		}
		// The code for the workers, who cancel the IRN if one exists; when
		// this is lost they send "other".
		if err := keepAsk(ctx, c.pool, seller.ID, inv.ID, ask, now); err != nil {
			return document.Invoice{}, false, err
		}
		return c.reread(ctx, seller, out, replayed)
	}
	out, replayed, err := invoice.CancelOnce(ctx, c.pool, seller, req.CancelRequest, now, c.opt)
	if err != nil {
		return document.Invoice{}, false, err
	}
	if inv.EInvoice.Status == einvoice.StatusRegistered {
		if err := c.finish(ctx, seller.ID, inv.ID, now); err != nil {
			return document.Invoice{}, false, err
		}
	}
	return c.reread(ctx, seller, out, replayed)
}

// reread returns out, just cancelled (or replayed), with its registration
// as it now is.
func (c *Canceller) reread(ctx context.Context, seller gst.Seller, out document.Invoice, replayed bool) (document.Invoice, bool, error) {
	inv, err := invoice.Get(ctx, c.pool, seller.ID, out.ID)
	if err != nil {
		return document.Invoice{}, false, err
	}
	return inv, replayed, nil
}

// cancelIRN cancels inv's registered IRN at the IRP, the cancel recorded as
// asked first, so that a lost answer is finished by the workers. It
// returns nil once the IRP has cancelled it (now or before), and the
// errors Cancel lists.
func (c *Canceller) cancelIRN(ctx context.Context, seller gst.Seller, inv document.Invoice, ask cancelAsk, now time.Time) error {
	if c.registrar == nil {
		return ErrNotConfigured
	}
	if age := now.Sub(inv.EInvoice.AckDate); age >= einvoice.CancelWindow {
		return apperr.Errorf(ErrCancelWindowClosed, "invoice %s's IRN was registered %s (%s ago); the IRP cancels an IRN within 24 hours only, so the invoice is not cancelled: issue a credit note against it instead",
			inv.Number, inv.EInvoice.AckDate.In(gst.IST).Format("2 Jan 2006 15:04 IST"), age.Truncate(time.Minute))
	}
	if err := invoice.CheckPeriod(ctx, c.pool, seller, inv.InvoiceDate, now); err != nil {
		return err
	}
	r, found, err := claimInvoice(ctx, c.pool, seller.ID, inv.ID, c.lease)
	if err != nil {
		return err
	}
	if !found || r.status != einvoice.StatusRegistered {
		return apperr.Errorf(ErrBusy, "invoice %s's registration changed meanwhile; retry", inv.Number)
	}
	if err := c.record(ctx, r, outcome{status: r.status, errText: r.errText, ask: &ask, next: now.Add(c.lease)}, now); err != nil {
		return err
	}
	r.ask = &ask
	_, err = c.registrar.Cancel(ctx, string(seller.GSTIN), einvoice.CancelRequest{IRN: r.irn, Reason: ask.code, Remark: ask.remark})
	if err == nil || einvoice.KindOf(err) == einvoice.KindNotActive {
		return nil // the IRN is cancelled; the row stays held until finish
	}
	text := textcut.To(err.Error(), 500)
	switch einvoice.KindOf(err) {
	case einvoice.KindCancelWindowClosed:
		if rerr := c.record(ctx, r, outcome{status: r.status, errText: "the cancel was refused: " + text, clearAsk: true}, now); rerr != nil {
			return rerr
		}
		return apperr.Errorf(ErrCancelWindowClosed, "the IRP refused to cancel invoice %s's IRN, registered more than 24 hours ago (%s), so the invoice is not cancelled: issue a credit note against it instead", inv.Number, text)
	case einvoice.KindEWayBillActive:
		if rerr := c.record(ctx, r, outcome{status: r.status, errText: "the cancel was refused: " + text, clearAsk: true}, now); rerr != nil {
			return rerr
		}
		return apperr.Errorf(ErrEWayBillActive, "the IRP refused to cancel invoice %s's IRN while an e-way bill on it is active (%s): cancel the e-way bill first", inv.Number, text)
	}
	// No answer, or refused credentials: asked, and due again soon (the
	// workers ask again and cancel the invoice).
	if rerr := c.record(ctx, r, outcome{status: r.status, errText: text, next: now.Add(5 * time.Second)}, now); rerr != nil {
		return rerr
	}
	return apperr.Errorf(ErrIRPUnavailable, "the IRP did not cancel invoice %s's IRN (%s): the invoice is not cancelled yet; the server asks again and then cancels it, or retry", inv.Number, text)
}

// finish records the IRN of the seller's invoice cancelled and the asked
// cancel done, after the invoice's cancel committed. A failure is not
// the caller's: the row stays asked and a worker finds the IRN cancelled
// (9999) and records the same.
func (c *Canceller) finish(ctx context.Context, sellerID, invoiceID int64, now time.Time) error {
	ctx, cancel := detached(ctx)
	defer cancel()
	return db.InTx(ctx, c.pool, func(tx pgx.Tx) error {
		var attempts, wakes int
		err := tx.QueryRow(ctx, `SELECT attempts, wakes FROM e_invoices WHERE seller_id = $1 AND invoice_id = $2 AND status = 'registered' FOR UPDATE`,
			sellerID, invoiceID).Scan(&attempts, &wakes)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // a worker recorded it first
		}
		if err != nil {
			return err
		}
		r := row{sellerID: sellerID, invoiceID: invoiceID, status: einvoice.StatusRegistered, attempts: attempts, wakes: wakes}
		_, err = record(ctx, tx, r, outcome{status: einvoice.StatusCancelled, irnCancelled: now, clearAsk: true}, now)
		return err
	})
}

// record records o for r's claim in a transaction of its own. It fails with
// ErrBusy when the claim ran out and a worker took the row.
func (c *Canceller) record(ctx context.Context, r row, o outcome, now time.Time) error {
	ctx, cancel := detached(ctx)
	defer cancel()
	var ok bool
	err := db.InTx(ctx, c.pool, func(tx pgx.Tx) (err error) {
		ok, err = record(ctx, tx, r, o, now)
		return err
	})
	if err != nil {
		return err
	}
	if !ok {
		return apperr.Errorf(ErrBusy, "the invoice's registration was taken by a worker meanwhile; retry")
	}
	return nil
}

// detached returns a context for a record that must outlive the request's
// deadline (which may have cut the IRP's answer short), bounded itself.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// keepAsk records ask on the pending registration of the seller's invoice
// (made now when the workers have not yet taken its event), for the
// workers to send if they cancel an IRN. It fails with the database's
// error.
func keepAsk(ctx context.Context, q db.Querier, sellerID, invoiceID int64, ask cancelAsk, now time.Time) error {
	_, err := q.Exec(ctx, `
		INSERT INTO e_invoices (invoice_id, seller_id, status, next_at, cancel_code, cancel_remark, cancel_reason)
		VALUES ($1, $2, 'pending', $3, $4, $5, $6)
		ON CONFLICT (invoice_id, seller_id) DO UPDATE SET cancel_code = $4, cancel_remark = $5, cancel_reason = $6
		WHERE e_invoices.status = 'pending'`, invoiceID, sellerID, now, int16(ask.code), ask.remark, ask.reason)
	if err != nil {
		return fmt.Errorf("registration: keep the cancel's reason: %w", err)
	}
	return nil
}
