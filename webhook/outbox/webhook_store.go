package outbox

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL of registered webhooks. A seller that e-invoices
// also has a subscriber of kind irp (docs/e-invoice.md, written by
// einvoice/registration): it is not one of the seller's webhooks, and these
// functions neither count, list nor delete it.

// MaxWebhooksPerSeller is the most live webhooks one seller may have.
const MaxWebhooksPerSeller = 16

// Webhook is a registered webhook.
type Webhook struct {
	ID       int64  // the database's id
	PublicID string // "wh_…", the id its seller knows it by
	URL      string
	Events   []string // the event types it subscribes to
	// Secret signs its deliveries; only CreateWebhook returns it.
	Secret    string
	CreatedAt time.Time
}

// newWebhookID returns a webhook's public id: "wh_" and 80 random bits.
func newWebhookID() string {
	var b [10]byte
	rand.Read(b[:])
	return "wh_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// CreateWebhook registers a webhook for the seller and returns it. It
// fails with ErrTooManyWebhooks when the seller has MaxWebhooksPerSeller
// live ones (counted under the seller's webhook lock, so two concurrent
// registrations cannot both pass), and with the database's error wrapped.
//
// The lock is an advisory one keyed by the seller, not FOR UPDATE of the
// seller's row: sellers is a reference table on Citus (docs/scale-out.md),
// where Citus refuses FOR UPDATE beside a read of a distributed table and
// would lock every node's copy otherwise. invoiced connects to the
// coordinator only, so the coordinator's advisory lock serialises every
// registration of one seller; the count and the insert then go to the
// seller's shard alone.
func CreateWebhook(ctx context.Context, b db.Beginner, sellerID int64, url string, events []string, secret string) (Webhook, error) {
	w := Webhook{PublicID: newWebhookID(), URL: url, Events: events, Secret: secret}
	err := db.InTx(ctx, b, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('webhooks:' || $1::bigint, 0))`, sellerID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `
			SELECT count(*) FROM webhooks WHERE seller_id = $1 AND deleted_at IS NULL AND kind = 'http'`, sellerID).Scan(&n); err != nil {
			return err
		}
		if n >= MaxWebhooksPerSeller {
			return ErrTooManyWebhooks
		}
		return tx.QueryRow(ctx, `
			INSERT INTO webhooks (public_id, seller_id, url, events, secret) VALUES ($1, $2, $3, $4, $5)
			RETURNING id, created_at`, w.PublicID, sellerID, url, events, secret).Scan(&w.ID, &w.CreatedAt)
	})
	if err != nil && !errors.Is(err, ErrTooManyWebhooks) {
		return Webhook{}, fmt.Errorf("outbox: create webhook: %w", err)
	}
	return w, err
}

// ListWebhooks returns the seller's live webhooks, oldest first, without
// their secrets. It fails with the database's error wrapped.
func ListWebhooks(ctx context.Context, q db.Querier, sellerID int64) ([]Webhook, error) {
	rows, err := q.Query(ctx, `
		SELECT id, public_id, url, events, created_at FROM webhooks
		WHERE seller_id = $1 AND deleted_at IS NULL AND kind = 'http' ORDER BY id`, sellerID)
	if err != nil {
		return nil, fmt.Errorf("outbox: list webhooks: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Webhook, error) {
		var w Webhook
		return w, r.Scan(&w.ID, &w.PublicID, &w.URL, &w.Events, &w.CreatedAt)
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: list webhooks: %w", err)
	}
	return out, nil
}

// DeleteWebhook marks the seller's webhook publicID deleted and drops its
// pending deliveries, in one transaction. It fails with
// ErrWebhookNotFound for an unknown or already deleted one, and with the
// database's error wrapped.
func DeleteWebhook(ctx context.Context, b db.Beginner, sellerID int64, publicID string) error {
	return db.InTx(ctx, b, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `
			UPDATE webhooks SET deleted_at = now()
			WHERE public_id = $1 AND seller_id = $2 AND deleted_at IS NULL AND kind = 'http' RETURNING id`, publicID, sellerID).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrWebhookNotFound
		}
		if err != nil {
			return fmt.Errorf("outbox: delete webhook: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE webhook_deliveries SET state = 'failed', last_error = 'webhook deleted'
			WHERE webhook_id = $1 AND seller_id = $2 AND state = 'pending'`, id, sellerID); err != nil {
			return fmt.Errorf("outbox: delete webhook: %w", err)
		}
		return nil
	})
}
