package api

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// This file holds the SQL of webhooks, events and deliveries.

// webhookRow is a registered webhook.
type webhookRow struct {
	id        int64
	publicID  string
	url       string
	events    []string
	secret    string
	createdAt time.Time
}

// newWebhookID returns a webhook's public id: "wh_" and 80 random bits.
func newWebhookID() string {
	var b [10]byte
	rand.Read(b[:])
	return "wh_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// createWebhookRow registers a webhook for the seller and returns it. It
// fails with errTooManyWebhooks when the seller has maxWebhooksPerSeller
// live ones (counted under a lock on the seller's row, so two concurrent
// registrations cannot both pass).
func createWebhookRow(ctx context.Context, db *pgxpool.Pool, sellerID int64, url string, events []string, secret string) (webhookRow, error) {
	w := webhookRow{publicID: newWebhookID(), url: url, events: events, secret: secret}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `
			SELECT (SELECT count(*) FROM webhooks WHERE seller_id = s.id AND deleted_at IS NULL)
			FROM sellers s WHERE s.id = $1 FOR UPDATE`, sellerID).Scan(&n); err != nil {
			return err
		}
		if n >= maxWebhooksPerSeller {
			return errTooManyWebhooks
		}
		return tx.QueryRow(ctx, `
			INSERT INTO webhooks (public_id, seller_id, url, events, secret) VALUES ($1, $2, $3, $4, $5)
			RETURNING id, created_at`, w.publicID, sellerID, url, events, secret).Scan(&w.id, &w.createdAt)
	})
	if err != nil && !errors.Is(err, errTooManyWebhooks) {
		return webhookRow{}, fmt.Errorf("api: create webhook: %w", err)
	}
	return w, err
}

// listWebhookRows returns the seller's live webhooks, oldest first.
func listWebhookRows(ctx context.Context, db series.DB, sellerID int64) ([]webhookRow, error) {
	rows, err := db.Query(ctx, `
		SELECT id, public_id, url, events, created_at FROM webhooks
		WHERE seller_id = $1 AND deleted_at IS NULL ORDER BY id`, sellerID)
	if err != nil {
		return nil, fmt.Errorf("api: list webhooks: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhookRow, error) {
		var w webhookRow
		return w, r.Scan(&w.id, &w.publicID, &w.url, &w.events, &w.createdAt)
	})
	if err != nil {
		return nil, fmt.Errorf("api: list webhooks: %w", err)
	}
	return out, nil
}

// deleteWebhookRow marks the seller's webhook publicID deleted and drops
// its pending deliveries, in one transaction. It fails with
// errWebhookNotFound for an unknown or already deleted one.
func deleteWebhookRow(ctx context.Context, db *pgxpool.Pool, sellerID int64, publicID string) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `
			UPDATE webhooks SET deleted_at = now()
			WHERE public_id = $1 AND seller_id = $2 AND deleted_at IS NULL RETURNING id`, publicID, sellerID).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return errWebhookNotFound
		}
		if err != nil {
			return fmt.Errorf("api: delete webhook: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE webhook_deliveries SET state = 'failed', last_error = 'webhook deleted'
			WHERE webhook_id = $1 AND state = 'pending'`, id); err != nil {
			return fmt.Errorf("api: delete webhook: %w", err)
		}
		return nil
	})
}

// eventRowID returns the database id of the seller's event of type typ on
// invoice invoiceID, or errBadAfter when none is kept.
func eventRowID(ctx context.Context, db series.DB, sellerID, invoiceID int64, typ string) (int64, error) {
	var id int64
	err := db.QueryRow(ctx, `SELECT id FROM events WHERE invoice_id = $1 AND type = $2 AND seller_id = $3`, invoiceID, typ, sellerID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errBadAfter
	}
	if err != nil {
		return 0, fmt.Errorf("api: find event: %w", err)
	}
	return id, nil
}

// listEventRows returns up to limit of the seller's events with ids above
// after, oldest first, with their invoices.
func listEventRows(ctx context.Context, db series.DB, sellerID, after int64, limit int) ([]eventRow, error) {
	rows, err := db.Query(ctx, `
		SELECT id, type, created_at, invoice_id FROM events
		WHERE seller_id = $1 AND id > $2 ORDER BY id LIMIT $3`, sellerID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("api: list events: %w", err)
	}
	type ref struct {
		ev        eventRow
		invoiceID int64
	}
	refs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ref, error) {
		var x ref
		return x, r.Scan(&x.ev.id, &x.ev.typ, &x.ev.createdAt, &x.invoiceID)
	})
	if err != nil {
		return nil, fmt.Errorf("api: list events: %w", err)
	}
	out := make([]eventRow, len(refs))
	for i, x := range refs {
		inv, err := invoice.Get(ctx, db, sellerID, x.invoiceID)
		if err != nil {
			return nil, err
		}
		x.ev.invoice = inv
		out[i] = x.ev
	}
	return out, nil
}

// delivery is one claimed delivery of an event to a webhook.
type delivery struct {
	eventID, webhookID int64
	attempts           int
	url, secret        string
	ev                 eventRow
	sellerID           int64
}

// claimDeliveries claims up to n due deliveries for lease: their next_at
// moves lease ahead and their attempts count up, so another worker (of
// this or another process) skips them meanwhile (FOR UPDATE SKIP LOCKED
// while claiming, next_at after), and a worker that dies leaves them due
// again when the lease ends. It returns them with their events.
func claimDeliveries(ctx context.Context, db series.DB, n int, lease time.Duration) ([]delivery, error) {
	rows, err := db.Query(ctx, `
		WITH due AS (
			SELECT event_id, webhook_id FROM webhook_deliveries
			WHERE state = 'pending' AND next_at <= now()
			ORDER BY next_at LIMIT $1
			FOR UPDATE SKIP LOCKED
		)
		UPDATE webhook_deliveries d SET next_at = now() + make_interval(secs => $2), attempts = d.attempts + 1
		FROM due, webhooks w, events e
		WHERE d.event_id = due.event_id AND d.webhook_id = due.webhook_id AND w.id = d.webhook_id AND e.id = d.event_id
		RETURNING d.event_id, d.webhook_id, d.attempts, w.url, w.secret, e.type, e.created_at, e.invoice_id, e.seller_id`,
		n, lease.Seconds())
	if err != nil {
		return nil, fmt.Errorf("api: claim deliveries: %w", err)
	}
	type claimed struct {
		d         delivery
		invoiceID int64
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (claimed, error) {
		var c claimed
		return c, r.Scan(&c.d.eventID, &c.d.webhookID, &c.d.attempts, &c.d.url, &c.d.secret, &c.d.ev.typ, &c.d.ev.createdAt, &c.invoiceID, &c.d.sellerID)
	})
	if err != nil {
		return nil, fmt.Errorf("api: claim deliveries: %w", err)
	}
	out := make([]delivery, 0, len(cs))
	for _, c := range cs {
		inv, err := invoice.Get(ctx, db, c.d.sellerID, c.invoiceID)
		if err != nil {
			return nil, err
		}
		c.d.ev.id, c.d.ev.invoice = c.d.eventID, inv
		out = append(out, c.d)
	}
	return out, nil
}

// finishDelivery records the end of an attempt: delivered, failed for
// good, or due again at next.
func finishDelivery(ctx context.Context, db series.DB, d delivery, state string, status int, lastErr string, next time.Time) error {
	var st *int
	if status != 0 {
		st = &status
	}
	_, err := db.Exec(ctx, `
		UPDATE webhook_deliveries SET state = $3, last_status = $4, last_error = nullif($5, ''),
			next_at = $6, delivered_at = CASE WHEN $3 = 'delivered' THEN now() END
		WHERE event_id = $1 AND webhook_id = $2`, d.eventID, d.webhookID, state, st, lastErr, next)
	if err != nil {
		return fmt.Errorf("api: record delivery: %w", err)
	}
	return nil
}

// purgeEvents deletes events created before cutoff (and their
// deliveries), at most batch at a time, and returns how many.
func purgeEvents(ctx context.Context, db series.DB, cutoff time.Time, batch int) (int64, error) {
	var total int64
	for {
		tag, err := db.Exec(ctx, `
			DELETE FROM events WHERE id IN (SELECT id FROM events WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, batch)
		if err != nil {
			return total, fmt.Errorf("api: purge events: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}
