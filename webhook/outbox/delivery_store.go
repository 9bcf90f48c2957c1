package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/invoice"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL of the delivery queue: claims, outcomes and the
// purge of old events.

// delivery is one claimed delivery of an event to a webhook.
type delivery struct {
	webhookID   int64
	attempts    int
	url, secret string
	ev          Event // ev.ID: the event's id
	sellerID    int64
}

// dueSellers returns up to limit sellers with due deliveries to live
// webhooks, the one whose delivery is due longest first. Deliveries to a
// seller's IRP subscriber (kind irp, docs/e-invoice.md) are the IRP
// workers', never posted.
func dueSellers(ctx context.Context, q db.Querier, limit int) ([]int64, error) {
	rows, err := q.Query(ctx, `
		SELECT d.seller_id FROM webhook_deliveries d
		JOIN webhooks w ON w.seller_id = d.seller_id AND w.id = d.webhook_id AND w.deleted_at IS NULL AND w.kind = 'http'
		WHERE d.state = 'pending' AND d.next_at <= now()
		GROUP BY d.seller_id ORDER BY min(d.next_at) LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("outbox: claim deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("outbox: claim deliveries: %w", err)
	}
	return out, nil
}

// claimSellerDeliveries claims up to n of the seller's due deliveries to
// live webhooks (a deleted webhook's are never sent), earliest first, for
// lease (their next_at moves lease ahead and their attempts count up, so
// other workers skip them meanwhile, and they are due again when the lease
// ends), in one statement every table of which is
// filtered by the seller: on Citus it runs on the seller's shard alone.
// It returns them with their events.
func claimSellerDeliveries(ctx context.Context, q db.Querier, sellerID int64, n int, lease time.Duration) ([]delivery, error) {
	rows, err := q.Query(ctx, `
		WITH due AS (
			SELECT d.event_id, d.webhook_id FROM webhook_deliveries d
			JOIN webhooks w ON w.seller_id = $1 AND w.id = d.webhook_id AND w.deleted_at IS NULL AND w.kind = 'http'
			WHERE d.seller_id = $1 AND d.state = 'pending' AND d.next_at <= now()
			ORDER BY d.next_at LIMIT $2
			FOR UPDATE OF d SKIP LOCKED
		)
		UPDATE webhook_deliveries d SET next_at = now() + make_interval(secs => $3), attempts = d.attempts + 1
		FROM due, webhooks w, events e
		WHERE d.seller_id = $1 AND d.event_id = due.event_id AND d.webhook_id = due.webhook_id
			AND w.seller_id = $1 AND w.id = d.webhook_id AND e.seller_id = $1 AND e.id = d.event_id
		RETURNING d.event_id, d.webhook_id, d.attempts, w.url, w.secret, e.type, e.created_at, e.invoice_id`,
		sellerID, n, lease.Seconds())
	if err != nil {
		return nil, fmt.Errorf("outbox: claim deliveries: %w", err)
	}
	type claimed struct {
		d         delivery
		invoiceID int64
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (claimed, error) {
		c := claimed{d: delivery{sellerID: sellerID}}
		return c, r.Scan(&c.d.ev.ID, &c.d.webhookID, &c.d.attempts, &c.d.url, &c.d.secret, &c.d.ev.Type, &c.d.ev.CreatedAt, &c.invoiceID)
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: claim deliveries: %w", err)
	}
	out := make([]delivery, 0, len(cs))
	for _, c := range cs {
		inv, err := invoice.Get(ctx, q, sellerID, c.invoiceID)
		if err != nil {
			return nil, err
		}
		c.d.ev.Invoice = inv
		out = append(out, c.d)
	}
	return out, nil
}

// finishDelivery records the end of the attempt d claimed: delivered,
// failed for good, or due again at next. It changes nothing when the
// delivery is no longer pending with d's attempt count: its claim ran out
// and another worker claimed it again (that attempt is the one to
// record), or its webhook was deleted meanwhile (DeleteWebhook failed
// it for good).
func finishDelivery(ctx context.Context, q db.Querier, d delivery, state string, status int, lastErr string, next time.Time) error {
	var st *int
	if status != 0 {
		st = &status
	}
	// now() only for a delivery, chosen here: Citus refuses a volatile
	// function inside CASE in an UPDATE.
	deliveredAt := "NULL"
	if state == "delivered" {
		deliveredAt = "now()"
	}
	_, err := q.Exec(ctx, `
		UPDATE webhook_deliveries SET state = $3, last_status = $4, last_error = nullif($5, ''),
			next_at = $6, delivered_at = `+deliveredAt+`
		WHERE event_id = $1 AND webhook_id = $2 AND seller_id = $7 AND state = 'pending' AND attempts = $8`,
		d.ev.ID, d.webhookID, state, st, lastErr, next, d.sellerID, d.attempts)
	if err != nil {
		return fmt.Errorf("outbox: record delivery: %w", err)
	}
	return nil
}

// PurgeEvents deletes events created before cutoff (and their
// deliveries), at most batch per statement, and returns how many. It
// fails with the database's error wrapped, returning how many it deleted
// before.
func PurgeEvents(ctx context.Context, q db.Querier, cutoff time.Time, batch int) (int64, error) {
	var total int64
	for {
		tag, err := q.Exec(ctx, `
			DELETE FROM events WHERE (id, seller_id) IN (SELECT id, seller_id FROM events WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, batch)
		if err != nil {
			return total, fmt.Errorf("outbox: purge events: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}
