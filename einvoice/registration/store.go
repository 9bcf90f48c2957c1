package registration

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/invoice"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL of the registration queue: taking the IRP
// subscriber's deliveries into e_invoices, claims, the record of a send
// and of each outcome. Every statement names its seller, so on Citus it
// runs on the seller's shard alone.

// row is an invoice's e_invoices row as a worker claimed it.
type row struct {
	sellerID, invoiceID int64
	status              einvoice.Status
	irn, ackNo          string
	ackDate             *time.Time
	errText             string
	sent                bool
	attempts            int // the claim's count: only the claimed attempt is recorded
	wakes               int // as claimed: a change means the row was made due again meanwhile
	ask                 *cancelAsk
}

// cancelAsk is a cancel asked through the API (Cancel) whose IRN cancel is
// not known to be done: the worker asks the IRP again, then cancels the
// invoice.
type cancelAsk struct {
	code   einvoice.CancelReason
	remark string // sent to the IRP
	reason string // the invoice's cancel reason
}

// irpDueSellers returns up to limit sellers with deliveries to their IRP
// subscriber not yet taken into e_invoices.
func irpDueSellers(ctx context.Context, q db.Querier, limit int) ([]int64, error) {
	rows, err := q.Query(ctx, `
		SELECT d.seller_id FROM webhook_deliveries d
		JOIN webhooks w ON w.seller_id = d.seller_id AND w.id = d.webhook_id AND w.kind = 'irp'
		WHERE d.state = 'pending'
		GROUP BY d.seller_id ORDER BY min(d.event_id) LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("registration: find queued events: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("registration: find queued events: %w", err)
	}
	return out, nil
}

// takeQueued takes up to limit of the seller's deliveries to its IRP
// subscriber (whatever their attempts and next_at: a webhook deliverer of
// an older binary may have tried them) into e_invoices, in one
// transaction: an issued invoice or note with a buyer GSTIN gets a
// pending row, due now; a cancelled one's row is made due now (waking a
// claimed one); the deliveries are marked delivered. A B2C invoice or a
// document the IRP does not register gets no row: it is not applicable.
// Then, without the IRP, every such row of a cancelled invoice whose
// registration was never sent is settled as cancelled (no IRN can exist).
// It returns how many deliveries it took, and fails with the database's
// error.
func takeQueued(ctx context.Context, b db.Beginner, sellerID int64, limit int, now time.Time) (int, error) {
	var n int
	err := db.InTx(ctx, b, func(tx pgx.Tx) error {
		var events, hooks, invoices []int64
		rows, err := tx.Query(ctx, `
			SELECT d.event_id, d.webhook_id, e.invoice_id FROM webhook_deliveries d
			JOIN webhooks w ON w.seller_id = $1 AND w.id = d.webhook_id AND w.kind = 'irp'
			JOIN events e ON e.seller_id = $1 AND e.id = d.event_id
			WHERE d.seller_id = $1 AND d.state = 'pending'
			ORDER BY d.event_id LIMIT $2
			FOR UPDATE OF d SKIP LOCKED`, sellerID, limit)
		if err != nil {
			return err
		}
		var ev, hook, inv int64
		if _, err := pgx.ForEachRow(rows, []any{&ev, &hook, &inv}, func() error {
			events, hooks, invoices = append(events, ev), append(hooks, hook), append(invoices, inv)
			return nil
		}); err != nil {
			return err
		}
		if n = len(events); n == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO e_invoices (invoice_id, seller_id, status, next_at)
			SELECT i.id, i.seller_id, 'pending', $3::timestamptz FROM invoices i
			JOIN series s ON s.seller_id = $1 AND s.id = i.series_id
			WHERE i.seller_id = $1 AND i.id = ANY ($2::bigint[]) AND i.buyer_gstin IS NOT NULL
				AND s.doc_type IN ('invoice', 'credit_note', 'debit_note')
			ON CONFLICT (invoice_id, seller_id) DO UPDATE SET next_at = $3::timestamptz, wakes = e_invoices.wakes + 1`,
			sellerID, invoices, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			UPDATE webhook_deliveries SET state = 'delivered', delivered_at = $4::timestamptz
			WHERE seller_id = $1 AND event_id = ANY ($2::bigint[]) AND webhook_id = ANY ($3::bigint[]) AND state = 'pending'`,
			sellerID, events, hooks, now); err != nil {
			return err
		}
		return settleUnsent(ctx, tx, sellerID, invoices, now)
	})
	if err != nil {
		return 0, fmt.Errorf("registration: take queued events: %w", err)
	}
	return n, nil
}

// settleUnsent settles as cancelled, inside tx, the pending rows among
// invoiceIDs of the seller's cancelled invoices whose registration was
// never sent, recording their e-invoice event: no request left for them,
// and none can leave now (markSent needs status pending), so no IRN
// exists.
func settleUnsent(ctx context.Context, tx pgx.Tx, sellerID int64, invoiceIDs []int64, now time.Time) error {
	rows, err := tx.Query(ctx, `
		UPDATE e_invoices e SET status = 'cancelled', next_at = NULL, error = NULL, updated_at = $3::timestamptz
		FROM invoices i
		WHERE e.seller_id = $1 AND e.invoice_id = ANY ($2::bigint[]) AND e.status = 'pending' AND NOT e.sent
			AND i.seller_id = $1 AND i.id = e.invoice_id AND i.status = 'cancelled'
		RETURNING e.invoice_id`, sellerID, invoiceIDs, now)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	for _, id := range ids {
		inv := document.Invoice{ID: id, SellerID: sellerID}
		if err := invoice.RecordEventTx(ctx, tx, &inv, invoice.EventEInvoiceCancelled, now); err != nil {
			return err
		}
	}
	return nil
}

// dueSellers returns up to limit sellers with rows due, the one due
// longest first.
func dueSellers(ctx context.Context, q db.Querier, limit int) ([]int64, error) {
	rows, err := q.Query(ctx, `
		SELECT seller_id FROM e_invoices WHERE next_at <= now()
		GROUP BY seller_id ORDER BY min(next_at) LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("registration: find due registrations: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("registration: find due registrations: %w", err)
	}
	return out, nil
}

// rowCols are the columns claim and claimInvoice return, scanned by
// scanRow.
const rowCols = `e.invoice_id, e.status, e.irn, e.ack_no, e.ack_date, e.error, e.sent, e.attempts, e.wakes,
	e.cancel_code, e.cancel_remark, e.cancel_reason`

func scanRow(sellerID int64, s pgx.Row) (row, error) {
	r := row{sellerID: sellerID}
	var status string
	var irn, ackNo, errText, remark, reason *string
	var code *int16
	if err := s.Scan(&r.invoiceID, &status, &irn, &ackNo, &r.ackDate, &errText, &r.sent, &r.attempts, &r.wakes, &code, &remark, &reason); err != nil {
		return row{}, err
	}
	r.status = einvoice.Status(status)
	r.irn, r.ackNo, r.errText = deref(irn), deref(ackNo), deref(errText)
	if code != nil {
		r.ask = &cancelAsk{code: einvoice.CancelReason(*code), remark: deref(remark), reason: deref(reason)}
	}
	return r, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// claim claims the seller's row due longest, if any, for lease: its
// next_at moves lease ahead and its attempts count up, so other workers
// skip it meanwhile and take it again when the lease ends. It reports
// false when the seller has none due, and fails with the database's error.
func claim(ctx context.Context, q db.Querier, sellerID int64, lease time.Duration) (row, bool, error) {
	r, err := scanRow(sellerID, q.QueryRow(ctx, `
		WITH due AS (
			SELECT invoice_id FROM e_invoices WHERE seller_id = $1 AND next_at <= now()
			ORDER BY next_at LIMIT 1 FOR UPDATE SKIP LOCKED
		)
		UPDATE e_invoices e SET next_at = now() + make_interval(secs => $2), attempts = e.attempts + 1
		FROM due WHERE e.seller_id = $1 AND e.invoice_id = due.invoice_id
		RETURNING `+rowCols, sellerID, lease.Seconds()))
	if errors.Is(err, pgx.ErrNoRows) {
		return row{}, false, nil
	}
	if err != nil {
		return row{}, false, fmt.Errorf("registration: claim: %w", err)
	}
	return r, true, nil
}

// claimInvoice claims the row of the seller's invoice for lease, as claim
// does, unless a worker holds it (its next_at lies ahead). It returns the
// row, found false when the invoice has none, ErrBusy when it is held, and
// the database's error.
func claimInvoice(ctx context.Context, q db.Querier, sellerID, invoiceID int64, lease time.Duration) (row, bool, error) {
	r, err := scanRow(sellerID, q.QueryRow(ctx, `
		UPDATE e_invoices e SET next_at = now() + make_interval(secs => $3), attempts = e.attempts + 1
		WHERE e.seller_id = $1 AND e.invoice_id = $2 AND (e.next_at IS NULL OR e.next_at <= now())
		RETURNING `+rowCols, sellerID, invoiceID, lease.Seconds()))
	if errors.Is(err, pgx.ErrNoRows) {
		var held bool
		if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT FROM e_invoices WHERE seller_id = $1 AND invoice_id = $2)`,
			sellerID, invoiceID).Scan(&held); err != nil {
			return row{}, false, fmt.Errorf("registration: claim: %w", err)
		}
		if held {
			return row{}, false, ErrBusy
		}
		return row{}, false, nil
	}
	if err != nil {
		return row{}, false, fmt.Errorf("registration: claim: %w", err)
	}
	return r, true, nil
}

// markSent records, before a registration request leaves, that the IRP may
// hold an IRN for r's invoice from now on. It reports false, and nothing
// may be sent, when r's claim is stale or its status is no longer pending
// (a cancel settled it meanwhile).
func markSent(ctx context.Context, q db.Querier, r row) (bool, error) {
	tag, err := q.Exec(ctx, `
		UPDATE e_invoices SET sent = true
		WHERE seller_id = $1 AND invoice_id = $2 AND attempts = $3 AND status = 'pending'`,
		r.sellerID, r.invoiceID, r.attempts)
	if err != nil {
		return false, fmt.Errorf("registration: record a send: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// outcome is what an attempt concluded: the row's new state.
type outcome struct {
	status einvoice.Status // the new status; r.status when unchanged
	reg    *einvoice.Registration
	// irnCancelled is when the IRP cancelled the IRN (zero: not now).
	irnCancelled time.Time
	errText      string    // the row's error; "" clears it
	next         time.Time // when the row is due again; zero: nothing left
	clearAsk     bool      // the asked cancel is done or refused
	ask          *cancelAsk
}

// record records o for r's claimed attempt, inside tx, and when the status
// changed the e-invoice event of r's invoice (for webhooks). It reports false,
// changing nothing, when r's claim is stale: its lease ran out and
// another attempt claimed the row. A row woken meanwhile stays due
// (at now) whatever o.next says. It fails with the database's error.
func record(ctx context.Context, tx pgx.Tx, r row, o outcome, now time.Time) (bool, error) {
	var irn, ackNo, signedInv, signedQR *string
	var ackDate, cancelledAt, next *time.Time
	if reg := o.reg; reg != nil {
		irn, ackNo = &reg.IRN, &reg.AckNo
		if !reg.AckDate.IsZero() {
			ackDate = &reg.AckDate
		}
		if reg.SignedInvoice != "" {
			signedInv, signedQR = &reg.SignedInvoice, &reg.SignedQRCode
		}
	}
	if !o.irnCancelled.IsZero() {
		cancelledAt = &o.irnCancelled
	}
	if !o.next.IsZero() {
		next = &o.next
	}
	var errText *string
	if o.errText != "" {
		errText = &o.errText
	}
	var code *int16
	var remark, reason *string
	askSet := o.ask != nil
	if askSet {
		c := int16(o.ask.code)
		code, remark, reason = &c, &o.ask.remark, &o.ask.reason
	}
	var was string
	err := tx.QueryRow(ctx, `
		WITH old AS (
			SELECT invoice_id, status FROM e_invoices
			WHERE seller_id = $1 AND invoice_id = $2 AND attempts = $3 FOR UPDATE
		)
		UPDATE e_invoices e SET status = $4, irn = coalesce($5, e.irn), ack_no = coalesce($6, e.ack_no),
			ack_date = coalesce($7, e.ack_date), signed_invoice = coalesce($8, e.signed_invoice),
			signed_qr_code = coalesce($9, e.signed_qr_code), irn_cancelled_at = coalesce($10, e.irn_cancelled_at),
			error = $11,
			next_at = CASE WHEN e.wakes <> $12 THEN $13::timestamptz ELSE $14::timestamptz END,
			cancel_code = CASE WHEN $15 THEN NULL WHEN $16 THEN $17 ELSE e.cancel_code END,
			cancel_remark = CASE WHEN $15 THEN NULL WHEN $16 THEN $18 ELSE e.cancel_remark END,
			cancel_reason = CASE WHEN $15 THEN NULL WHEN $16 THEN $19 ELSE e.cancel_reason END,
			updated_at = $13::timestamptz
		FROM old WHERE e.seller_id = $1 AND e.invoice_id = old.invoice_id
		RETURNING old.status`,
		r.sellerID, r.invoiceID, r.attempts, string(o.status), irn, ackNo, ackDate, signedInv, signedQR, cancelledAt,
		errText, r.wakes, now, next, o.clearAsk, askSet, code, remark, reason).Scan(&was)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("registration: record: %w", err)
	}
	// The event of a change, judged against the status the row had under
	// this statement's lock (not the claim's): a change another writer
	// made first (the Canceller's finish, the take's unsent cancels) is
	// told once.
	if typ := eventOf(o.status); typ != "" && einvoice.Status(was) != o.status {
		inv := document.Invoice{ID: r.invoiceID, SellerID: r.sellerID}
		if err := invoice.RecordEventTx(ctx, tx, &inv, typ, now); err != nil {
			return false, err
		}
	}
	return true, nil
}

// eventOf returns the event type of a change to status s, "" for none.
func eventOf(s einvoice.Status) string {
	switch s {
	case einvoice.StatusRegistered:
		return invoice.EventEInvoiceRegistered
	case einvoice.StatusFailed:
		return invoice.EventEInvoiceFailed
	case einvoice.StatusCancelled:
		return invoice.EventEInvoiceCancelled
	}
	return ""
}

// Problem is a registration that needs a person: failed (the IRP refused
// the document, or holds another document under its number), or an IRN
// left live for a cancelled invoice (the IRP refused its cancel).
type Problem struct {
	InvoiceID int64
	Number    string
	Status    einvoice.Status
	IRN       string
	Error     string
	UpdatedAt time.Time
}

// Problems returns up to limit of the seller's registrations that carry an
// error and have no work left (failed, or an IRN the IRP would not cancel),
// newest first, with the number of their invoice. It fails with the
// database's error.
func Problems(ctx context.Context, q db.Querier, sellerID int64, limit int) ([]Problem, error) {
	rows, err := q.Query(ctx, `
		SELECT e.invoice_id, i.number, e.status, coalesce(e.irn, ''), e.error, e.updated_at
		FROM e_invoices e JOIN invoices i ON i.seller_id = $1 AND i.id = e.invoice_id
		WHERE e.seller_id = $1 AND e.error IS NOT NULL AND e.next_at IS NULL
		ORDER BY e.updated_at DESC LIMIT $2`, sellerID, limit)
	if err != nil {
		return nil, fmt.Errorf("registration: list problems: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Problem, error) {
		var p Problem
		var st string
		err := r.Scan(&p.InvoiceID, &p.Number, &st, &p.IRN, &p.Error, &p.UpdatedAt)
		p.Status = einvoice.Status(st)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("registration: list problems: %w", err)
	}
	return out, nil
}
