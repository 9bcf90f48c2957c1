package registration

import (
	"context"
	"errors"
	"fmt"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/textcut"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/sellers"
	"github.com/jackc/pgx/v5"
	"time"
	"unicode/utf8"
)

// The decisions: what a claimed row, its invoice and the IRP's answer
// lead to. docs/e-invoice.md renders them as the answer table's last
// column. The invariants: a registration request leaves only after sent
// is recorded (markSent); a row whose request may have left is never
// concluded unregistered, only registered (RegisterOnce), refused
// (KindRejected: the IRP registers a duplicate before judging anything
// else) or still pending; a cancelled invoice's row ends cancelled only
// when no IRN exists or its IRN is cancelled at the IRP.

// settle settles the claimed row r, one step, and records the outcome.
// When ctx ends during the attempt the row is recorded due again at once
// (what was sent is known from sent: nothing is concluded from the cut).
func (w *Worker) settle(ctx context.Context, r row) {
	o, err := w.decide(ctx, r)
	now := w.cfg.Now()
	switch {
	case errors.Is(err, errStale):
		return // another attempt holds the row now
	case ctx.Err() != nil:
		o = outcome{status: r.status, errText: r.errText, next: now}
	case err != nil:
		o = outcome{status: r.status, errText: textcut.To(err.Error(), 500), next: now.Add(w.backoff(r.attempts))}
		w.log.Warn("e-invoicing: settling a registration failed", "seller_id", r.sellerID, "invoice_id", r.invoiceID, "err", err)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = db.InTx(rctx, w.cfg.Pool, func(tx pgx.Tx) error {
		_, err := record(rctx, tx, r, o, now)
		return err
	})
	if err != nil {
		// The lease ends and the row is settled again.
		w.log.Warn("e-invoicing: recording an outcome failed", "seller_id", r.sellerID, "invoice_id", r.invoiceID, "err", err)
		return
	}
	w.metrics.EInvoiceSettled(metricOutcome(r, o))
}

// metricOutcome names o for invoiced_einvoice_settled_total.
func metricOutcome(r row, o outcome) string {
	switch {
	case o.status != r.status:
		return string(o.status)
	case !o.next.IsZero():
		return "retry"
	}
	return "unchanged"
}

// errStale: the claim ran out and another attempt holds the row; this one
// records nothing.
var errStale = errors.New("registration: the claim is stale")

// decide returns the outcome of one step on r. It fails with the
// database's errors (the row is then retried) and errStale.
func (w *Worker) decide(ctx context.Context, r row) (outcome, error) {
	keep := outcome{status: r.status, errText: r.errText}
	inv, err := invoice.Get(ctx, w.cfg.Pool, r.sellerID, r.invoiceID)
	if err != nil {
		return keep, err
	}
	seller, err := sellers.ByID(ctx, w.cfg.Pool, r.sellerID)
	if err != nil {
		return keep, err
	}
	cancelled := inv.Status == document.StatusCancelled
	switch r.status {
	case einvoice.StatusRegistered:
		if cancelled || r.ask != nil {
			return w.cancelIRN(ctx, r, inv, seller)
		}
		return keep, nil
	case einvoice.StatusFailed:
		if cancelled {
			// Refused by the IRP: no IRN of this document exists.
			return outcome{status: einvoice.StatusCancelled, errText: r.errText}, nil
		}
		return keep, nil
	case einvoice.StatusPending:
		return w.register(ctx, r, inv, seller)
	}
	return keep, nil // cancelled: nothing left
}

// register is a step on a pending row: it sends the invoice's payload
// through RegisterOnce (after recording that it is sent) and concludes
// from the answer. A cancelled invoice whose registration was never sent
// is cancelled without the IRP; one whose registration may exist is
// registered once, to cancel its IRN next.
func (w *Worker) register(ctx context.Context, r row, inv document.Invoice, seller gst.Seller) (outcome, error) {
	now := w.cfg.Now()
	cancelled := inv.Status == document.StatusCancelled
	if cancelled && !r.sent {
		return outcome{status: einvoice.StatusCancelled}, nil
	}
	issued := inv
	issued.Status, issued.CancelledAt, issued.CancelReason = document.StatusIssued, nil, ""
	p, err := einvoice.Build(issued, InputFor(seller, inv))
	if err != nil {
		switch {
		case cancelled && !r.sent:
			return outcome{status: einvoice.StatusCancelled}, nil
		case !r.sent:
			// Nothing was sent: the IRP holds no IRN for it, and this
			// payload would be refused.
			return outcome{status: einvoice.StatusFailed, errText: textcut.To(err.Error(), 500)}, nil
		}
		// Sent before (the seller's address has changed since): what was
		// sent may be registered. Look it up, never conclude no.
		key := einvoice.DocKey{GSTIN: string(seller.GSTIN), Type: docType(inv), Number: inv.Number, Date: inv.InvoiceDate}
		reg, lerr := w.cfg.Registrar.Lookup(ctx, key)
		if lerr == nil {
			return w.registered(reg, cancelled, now), nil
		}
		return outcome{status: einvoice.StatusPending, errText: textcut.To(err.Error(), 500), next: now.Add(w.cfg.RetryMax)}, nil
	}
	if !r.sent {
		ok, err := markSent(ctx, w.cfg.Pool, r)
		if err != nil {
			return outcome{status: r.status, errText: r.errText}, err
		}
		if !ok {
			return outcome{}, errStale
		}
	}
	reg, err := einvoice.RegisterOnce(ctx, w.cfg.Registrar, p)
	if err == nil {
		return w.registered(reg, cancelled, now), nil
	}
	text := textcut.To(err.Error(), 500)
	switch einvoice.KindOf(err) {
	case einvoice.KindRejected:
		// Not registered (a registered document is answered 2150 before
		// anything else is judged), and refused as it is.
		if cancelled {
			return outcome{status: einvoice.StatusCancelled, errText: text}, nil
		}
		return outcome{status: einvoice.StatusFailed, errText: text}, nil
	case einvoice.KindMismatch:
		return outcome{status: einvoice.StatusFailed, errText: text}, nil
	case einvoice.KindAuth:
		return outcome{status: einvoice.StatusPending, errText: text, next: now.Add(w.cfg.RetryMax)}, nil
	}
	// Unknown, unavailable, or registered with nothing to show yet: ask
	// again (a duplicate then recovers it).
	return outcome{status: einvoice.StatusPending, errText: text, next: now.Add(w.backoff(r.attempts))}, nil
}

// registered returns the outcome of a registration: registered, and due
// again at once when the invoice is cancelled (its IRN is cancelled next).
func (w *Worker) registered(reg *einvoice.Registration, cancelled bool, now time.Time) outcome {
	o := outcome{status: einvoice.StatusRegistered, reg: reg}
	if cancelled {
		o.next = now
	}
	return o
}

// docType returns the IRP's type of inv (INV for a type it does not
// register: a lookup of it finds nothing).
func docType(inv document.Invoice) einvoice.DocType {
	t, ok := einvoice.DocTypeOf(inv.DocType)
	if !ok {
		return einvoice.TypeInvoice
	}
	return t
}

// cancelIRN is a step on a registered row whose invoice is cancelled, or
// whose cancel was asked through the API: it cancels the IRN at the IRP
// and, for an asked cancel, then the invoice.
func (w *Worker) cancelIRN(ctx context.Context, r row, inv document.Invoice, seller gst.Seller) (outcome, error) {
	now := w.cfg.Now()
	cancelled := inv.Status == document.StatusCancelled
	ask := askOf(r, inv)
	_, err := w.cfg.Registrar.Cancel(ctx, string(seller.GSTIN), einvoice.CancelRequest{IRN: r.irn, Reason: ask.code, Remark: ask.remark})
	if err != nil && einvoice.KindOf(err) != einvoice.KindNotActive {
		text := textcut.To(err.Error(), 500)
		switch einvoice.KindOf(err) {
		case einvoice.KindCancelWindowClosed:
			if cancelled {
				return outcome{status: einvoice.StatusRegistered, clearAsk: true,
					errText: "the invoice is cancelled but the IRP refused to cancel its IRN, registered more than 24 hours ago: issue a credit note against it (" + text + ")"}, nil
			}
			return outcome{status: einvoice.StatusRegistered, clearAsk: true, errText: "the cancel was refused: " + text}, nil
		case einvoice.KindEWayBillActive:
			if cancelled {
				return outcome{status: einvoice.StatusRegistered, errText: "the invoice is cancelled but an e-way bill on its IRN is active: cancel the e-way bill (" + text + ")",
					next: now.Add(w.cfg.RetryMax)}, nil
			}
			return outcome{status: einvoice.StatusRegistered, clearAsk: true, errText: "the cancel was refused: " + text}, nil
		case einvoice.KindAuth:
			return outcome{status: einvoice.StatusRegistered, errText: text, next: now.Add(w.cfg.RetryMax)}, nil
		}
		return outcome{status: einvoice.StatusRegistered, errText: text, next: now.Add(w.backoff(r.attempts))}, nil
	}
	// The IRN is cancelled (now, or by an earlier attempt whose answer was
	// lost). An asked cancel then cancels the invoice.
	if !cancelled {
		_, err := invoice.Cancel(ctx, w.cfg.Pool, seller, inv.ID, ask.reason, now, w.cfg.Options)
		if err != nil && !errors.Is(err, invoice.ErrAlreadyCancelled) {
			return outcome{status: einvoice.StatusRegistered, errText: fmt.Sprintf("the IRN is cancelled at the IRP but the invoice could not be: %v", err),
				next: now.Add(w.backoff(r.attempts))}, nil
		}
	}
	return outcome{status: einvoice.StatusCancelled, irnCancelled: now, clearAsk: true}, nil
}

// askOf returns the cancel asked of r, or for an invoice cancelled without
// asking (offline, or while its registration was pending) reason "other"
// with the invoice's reason as the remark.
func askOf(r row, inv document.Invoice) cancelAsk {
	if r.ask != nil {
		return *r.ask
	}
	return cancelAsk{code: einvoice.CancelOther, remark: remarkOf(inv.CancelReason), reason: inv.CancelReason}
}

// remarkOf returns reason as the IRP's cancel remark: 1 to 100 characters.
func remarkOf(reason string) string {
	if reason == "" {
		return "cancelled"
	}
	if utf8.RuneCountInString(reason) <= einvoice.MaxCancelRemark {
		return reason
	}
	return string([]rune(reason)[:einvoice.MaxCancelRemark])
}
