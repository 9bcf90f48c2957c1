package invoice

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

// Event types.
const (
	EventIssued    = "invoice.issued"
	EventCancelled = "invoice.cancelled"
)

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
