package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/invoice"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL that reads the event log.

// EventRetention is how long events are kept (for GET /v1/events and
// for their deliveries); PurgeEvents deletes older ones.
const EventRetention = 30 * 24 * time.Hour

// Event is an event with its invoice as it is now.
type Event struct {
	ID        int64  // the database's id, ascending in the order events were recorded
	Type      string // invoice.EventIssued or invoice.EventCancelled
	CreatedAt time.Time
	Invoice   document.Invoice
}

// LookupEvent returns the database id of the seller's event of type typ
// on invoice invoiceID. It fails with ErrEventNotFound when none is kept,
// and with the database's error wrapped.
func LookupEvent(ctx context.Context, q db.Querier, sellerID, invoiceID int64, typ string) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, `SELECT id FROM events WHERE invoice_id = $1 AND type = $2 AND seller_id = $3`, invoiceID, typ, sellerID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrEventNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("outbox: find event: %w", err)
	}
	return id, nil
}

// ListEvents returns up to limit of the seller's events with ids above
// after, oldest first, with their invoices (read in one more query). It
// fails with the database's error, wrapped, or invoice.GetMany's, and
// with invoice.ErrNotFound for an event whose invoice is gone.
func ListEvents(ctx context.Context, q db.Querier, sellerID, after int64, limit int) ([]Event, error) {
	rows, err := q.Query(ctx, `
		SELECT id, type, created_at, invoice_id FROM events
		WHERE seller_id = $1 AND id > $2 ORDER BY id LIMIT $3`, sellerID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("outbox: list events: %w", err)
	}
	type ref struct {
		ev        Event
		invoiceID int64
	}
	refs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ref, error) {
		var x ref
		return x, r.Scan(&x.ev.ID, &x.ev.Type, &x.ev.CreatedAt, &x.invoiceID)
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: list events: %w", err)
	}
	ids := make([]int64, len(refs))
	for i, x := range refs {
		ids[i] = x.invoiceID
	}
	invs, err := invoice.GetMany(ctx, q, sellerID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Event, len(refs))
	for i, x := range refs {
		inv, ok := invs[x.invoiceID]
		if !ok {
			return nil, apperr.Errorf(invoice.ErrNotFound, "invoice %d of event %d is not found", x.invoiceID, x.ev.ID)
		}
		x.ev.Invoice = inv
		out[i] = x.ev
	}
	return out, nil
}
