package invoice

import (
	"time"

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
// statement the transaction sends anyway (no extra round trip).

// Event types.
const (
	EventIssued    = "invoice.issued"
	EventCancelled = "invoice.cancelled"
)

// issuedEventsSQL is two CTEs of the invoice insert (writes.queue): they
// record invoice.issued for the rows of ins whose seller subscribes, and
// their deliveries.
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

// queueCancelledEvent queues on b the statement recording invoice.cancelled
// for the seller's invoice id cancelled at, when the seller subscribes.
func queueCancelledEvent(b *pgx.Batch, sellerID, id int64, at time.Time) {
	b.Queue(`
		WITH ev AS (
			INSERT INTO events (seller_id, type, invoice_id, created_at)
			SELECT $1, 'invoice.cancelled', $2, $3
			WHERE EXISTS (SELECT 1 FROM webhooks w WHERE w.seller_id = $1
				AND w.deleted_at IS NULL AND 'invoice.cancelled' = ANY (w.events))
			RETURNING id
		)
		INSERT INTO webhook_deliveries (event_id, webhook_id, seller_id)
		SELECT ev.id, w.id, $1 FROM ev
		JOIN webhooks w ON w.seller_id = $1 AND w.deleted_at IS NULL AND 'invoice.cancelled' = ANY (w.events)`,
		sellerID, id, at)
}
