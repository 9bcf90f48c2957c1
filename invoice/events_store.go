package invoice

import (
	"context"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
)

// The transactional outbox: the statements that issue or cancel invoices
// also record their events, in the same transaction, so an event exists
// if and only if its change committed. An event is recorded only for a
// seller with a live webhook subscribed to its type, judged by the
// statement itself (no cache: a webhook gets the events of every change
// whose statement ran after the webhook's registration committed), and
// with it one delivery row per such webhook. For a seller without
// webhooks the cost is one index probe of webhooks per invoice, inside a
// statement the transaction sends anyway (no extra round trip). A
// cancellation, an offline upload and the routed form (Citus) read the
// seller's subscription first, in a round trip they make anyway, and then
// record events with statements of their own (queueEvents), only when it
// holds.

// Event types. The e-invoice ones say that an invoice's registration at
// the IRP changed (docs/e-invoice.md); each happens at most once per
// invoice.
const (
	EventIssued             = "invoice.issued"
	EventCancelled          = "invoice.cancelled"
	EventEInvoiceRegistered = "invoice.e_invoice_registered"
	EventEInvoiceFailed     = "invoice.e_invoice_failed"
	EventEInvoiceCancelled  = "invoice.e_invoice_cancelled"
)

// EventTypes returns every event type, in the order above.
func EventTypes() []string {
	return []string{EventIssued, EventCancelled, EventEInvoiceRegistered, EventEInvoiceFailed, EventEInvoiceCancelled}
}

// RecordEventTx records, inside tx, the event of type typ on inv at at and
// its deliveries, when inv's seller has a live webhook subscribed to typ
// (one round trip to find out, one more to record): for changes made
// outside the issuing and cancelling statements, such as an e-invoice's.
// An invoice has at most one event of each type. It fails with the
// database's error.
func RecordEventTx(ctx context.Context, tx pgx.Tx, inv *document.Invoice, typ string, at time.Time) error {
	subscribed := map[int64]bool{}
	b := &pgx.Batch{}
	queueSubscribed(b, []int64{inv.SellerID}, typ, subscribed)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return translate(err, "read webhooks")
	}
	events := &pgx.Batch{}
	if !queueEvents(events, []*document.Invoice{inv}, typ, func(*document.Invoice) time.Time { return at }, subscribed) {
		return nil
	}
	if err := tx.SendBatch(ctx, events).Close(); err != nil {
		return translate(err, "record event")
	}
	return nil
}

// issuedEventsSQL is two CTEs of the invoice insert of plain PostgreSQL
// (writes.queue): they record invoice.issued for the rows of ins whose
// seller subscribes, and their deliveries. The routed form, for Citus,
// records events with statements of their own (queueEvents,
// routed_store.go): Citus refuses the correlated subquery beside a CTE,
// and would copy the CTE's rows to every worker.
const issuedEventsSQL = `
		issued_events AS (
			INSERT INTO events (seller_id, type, invoice_id, created_at)
			SELECT ins.seller_id, 'invoice.issued', ins.id, ins.issued_at FROM ins
			WHERE EXISTS (SELECT 1 FROM webhooks w WHERE w.seller_id = ins.seller_id
				AND w.deleted_at IS NULL AND 'invoice.issued' = ANY (w.events))
			RETURNING id, seller_id
		), issued_deliveries AS (
			INSERT INTO webhook_deliveries (event_id, webhook_id, seller_id)
			SELECT ev.id, w.id, ev.seller_id FROM issued_events ev
			JOIN webhooks w ON w.seller_id = ev.seller_id AND w.deleted_at IS NULL AND 'invoice.issued' = ANY (w.events)
		)`

// EachEvent calls fn with each of the seller's events whose id is above
// after, oldest first, at most limit of them, with its invoice as it is
// now, as they arrive from the database (webhook/outbox lists them). It
// returns fn's first error (reading no further), ErrNotFound naming an
// event whose invoice is gone, or a database error.
//
// One statement: the events in id order on (seller, id), each joined to
// its invoice (with its e-invoice, readCols) by a lookup of the primary
// key that cannot be flattened into a join (OFFSET 0), so the page reads its events and their invoices
// and nothing else. The invoices of a page used to be read with id =
// ANY(the page's ids); a generic plan for the average seller took the
// (series, year, serial) key instead and filtered a large seller's
// year by id (199,950 rows thrown away for a page of 50).
func EachEvent(ctx context.Context, q db.Querier, sellerID, after int64, limit int,
	fn func(id int64, typ string, at time.Time, inv document.Invoice) error) error {
	rows, err := q.Query(ctx, `
		SELECT evt.id, evt.type, evt.created_at, evt.invoice_id, `+readCols("$1")+`
		FROM events evt
		LEFT JOIN LATERAL (SELECT * FROM invoices i WHERE i.id = evt.invoice_id AND i.seller_id = $1 OFFSET 0) i ON true
		LEFT JOIN series s ON s.id = i.series_id AND s.seller_id = $1
		LEFT JOIN e_invoices e ON e.invoice_id = i.id AND e.seller_id = $1
		WHERE evt.seller_id = $1 AND evt.id > $2
		ORDER BY evt.id LIMIT $3`, sellerID, after, limit)
	if err != nil {
		return translate(err, "list events")
	}
	defer rows.Close()
	for rows.Next() {
		var id, invoiceID int64
		var typ string
		var at time.Time
		if rows.RawValues()[4] == nil { // no invoice joined: i.id is NULL
			dst := make([]any, len(rows.FieldDescriptions())) // nil skips a column
			dst[0], dst[1], dst[2], dst[3] = &id, &typ, &at, &invoiceID
			if err := rows.Scan(dst...); err != nil {
				return translate(err, "list events")
			}
			return apperr.Errorf(ErrNotFound, "invoice %d of event %d is not found", invoiceID, id)
		}
		inv, err := scanReadAfter(rows, &id, &typ, &at, &invoiceID)
		if err != nil {
			return translate(err, "list events")
		}
		if err := fn(id, typ, at, inv); err != nil {
			return err
		}
	}
	return translate(rows.Err(), "list events")
}
