package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/invoice"
	"github.com/jackc/pgx/v5"
)

// This file reads the event log: an event by its invoice here, pages of
// events with their invoices through invoice.EachEvent (one statement,
// which the invoice package writes: it knows the invoice's columns).

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

// EachEvent calls fn with each of the seller's events with an id above
// after, oldest first, at most limit of them, with its invoice as it is
// now, as they arrive from the database (invoice.EachEvent reads them in
// one statement). It returns fn's first error (reading no further),
// invoice.ErrNotFound for an event whose invoice is gone, and database
// errors wrapped.
func EachEvent(ctx context.Context, q db.Querier, sellerID, after int64, limit int, fn func(Event) error) error {
	return invoice.EachEvent(ctx, q, sellerID, after, limit, func(id int64, typ string, at time.Time, inv document.Invoice) error {
		return fn(Event{ID: id, Type: typ, CreatedAt: at, Invoice: inv})
	})
}
