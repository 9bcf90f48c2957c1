package api

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/invoice"
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
// live ones (counted under the seller's webhook lock, so two concurrent
// registrations cannot both pass).
//
// The lock is an advisory one keyed by the seller, not FOR UPDATE of the
// seller's row: sellers is a reference table on Citus (docs/scale-out.md),
// where Citus refuses FOR UPDATE beside a read of a distributed table and
// would lock every node's copy otherwise. invoiced connects to the
// coordinator only, so the coordinator's advisory lock serialises every
// registration of one seller; the count and the insert then go to the
// seller's shard alone.
func createWebhookRow(ctx context.Context, pool *pgxpool.Pool, sellerID int64, url string, events []string, secret string) (webhookRow, error) {
	w := webhookRow{publicID: newWebhookID(), url: url, events: events, secret: secret}
	err := db.InTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('webhooks:' || $1::bigint, 0))`, sellerID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `
			SELECT count(*) FROM webhooks WHERE seller_id = $1 AND deleted_at IS NULL`, sellerID).Scan(&n); err != nil {
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
func listWebhookRows(ctx context.Context, db db.Querier, sellerID int64) ([]webhookRow, error) {
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
func deleteWebhookRow(ctx context.Context, pool *pgxpool.Pool, sellerID int64, publicID string) error {
	return db.InTx(ctx, pool, func(tx pgx.Tx) error {
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
			WHERE webhook_id = $1 AND seller_id = $2 AND state = 'pending'`, id, sellerID); err != nil {
			return fmt.Errorf("api: delete webhook: %w", err)
		}
		return nil
	})
}

// eventRowID returns the database id of the seller's event of type typ on
// invoice invoiceID, or errBadAfter when none is kept.
func eventRowID(ctx context.Context, db db.Querier, sellerID, invoiceID int64, typ string) (int64, error) {
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
func listEventRows(ctx context.Context, db db.Querier, sellerID, after int64, limit int) ([]eventRow, error) {
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

// claimDeliveries claims up to n due deliveries for lease, at most one
// per seller in each pass over the sellers with due deliveries (so one
// seller's backlog does not fill a claim): their next_at moves lease ahead
// and their attempts count up, so another worker (of this or another
// process) skips them meanwhile (FOR UPDATE SKIP LOCKED while claiming,
// next_at after), and a worker that dies leaves them due again when the
// lease ends. It returns them with their events. A worker that sends one
// after another needs a lease covering all of them: the Deliverer claims
// one delivery at a time (dueSellers, claimSellerDeliveries) instead.
//
// It claims seller by seller (claimSellerDeliveries), because Citus runs
// FOR UPDATE only in a statement that goes to one shard. Workers that
// read the same sellers at once share them: each skips the rows another
// has locked, and rows another has claimed are no longer due.
func claimDeliveries(ctx context.Context, q db.Querier, n int, lease time.Duration) ([]delivery, error) {
	sellers, err := dueSellers(ctx, q, n*candidatesPerClaim)
	if err != nil {
		return nil, err
	}
	var out []delivery
	for len(out) < n && len(sellers) > 0 {
		left := sellers[:0]
		for _, s := range sellers {
			if len(out) == n {
				break
			}
			ds, err := claimSellerDeliveries(ctx, q, s, 1, lease)
			if err != nil {
				return out, err
			}
			if len(ds) > 0 {
				out = append(out, ds...)
				left = append(left, s)
			}
		}
		sellers = left
	}
	return out, nil
}

// dueSellers returns up to limit sellers with due deliveries to live
// webhooks, the one whose delivery is due longest first.
func dueSellers(ctx context.Context, q db.Querier, limit int) ([]int64, error) {
	rows, err := q.Query(ctx, `
		SELECT d.seller_id FROM webhook_deliveries d
		JOIN webhooks w ON w.seller_id = d.seller_id AND w.id = d.webhook_id AND w.deleted_at IS NULL
		WHERE d.state = 'pending' AND d.next_at <= now()
		GROUP BY d.seller_id ORDER BY min(d.next_at) LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("api: claim deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("api: claim deliveries: %w", err)
	}
	return out, nil
}

// candidatesPerClaim is how many sellers claimDeliveries reads per
// delivery it claims: enough that a process's workers polling at once
// each find unclaimed ones.
const candidatesPerClaim = 4

// claimSellerDeliveries claims up to n of the seller's due deliveries to
// live webhooks (a deleted webhook's are never sent), earliest first, for
// lease (see claimDeliveries), in one statement every table of which is
// filtered by the seller: on Citus it runs on the seller's shard alone.
// It returns them with their events.
func claimSellerDeliveries(ctx context.Context, q db.Querier, sellerID int64, n int, lease time.Duration) ([]delivery, error) {
	rows, err := q.Query(ctx, `
		WITH due AS (
			SELECT d.event_id, d.webhook_id FROM webhook_deliveries d
			JOIN webhooks w ON w.seller_id = $1 AND w.id = d.webhook_id AND w.deleted_at IS NULL
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
		return nil, fmt.Errorf("api: claim deliveries: %w", err)
	}
	type claimed struct {
		d         delivery
		invoiceID int64
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (claimed, error) {
		c := claimed{d: delivery{sellerID: sellerID}}
		return c, r.Scan(&c.d.eventID, &c.d.webhookID, &c.d.attempts, &c.d.url, &c.d.secret, &c.d.ev.typ, &c.d.ev.createdAt, &c.invoiceID)
	})
	if err != nil {
		return nil, fmt.Errorf("api: claim deliveries: %w", err)
	}
	out := make([]delivery, 0, len(cs))
	for _, c := range cs {
		inv, err := invoice.Get(ctx, q, sellerID, c.invoiceID)
		if err != nil {
			return nil, err
		}
		c.d.ev.id, c.d.ev.invoice = c.d.eventID, inv
		out = append(out, c.d)
	}
	return out, nil
}

// finishDelivery records the end of the attempt d claimed: delivered,
// failed for good, or due again at next. It changes nothing when the
// delivery is no longer pending with d's attempt count: its claim ran out
// and another worker claimed it again (that attempt is the one to
// record), or its webhook was deleted meanwhile (deleteWebhookRow failed
// it for good).
func finishDelivery(ctx context.Context, db db.Querier, d delivery, state string, status int, lastErr string, next time.Time) error {
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
	_, err := db.Exec(ctx, `
		UPDATE webhook_deliveries SET state = $3, last_status = $4, last_error = nullif($5, ''),
			next_at = $6, delivered_at = `+deliveredAt+`
		WHERE event_id = $1 AND webhook_id = $2 AND seller_id = $7 AND state = 'pending' AND attempts = $8`,
		d.eventID, d.webhookID, state, st, lastErr, next, d.sellerID, d.attempts)
	if err != nil {
		return fmt.Errorf("api: record delivery: %w", err)
	}
	return nil
}

// purgeEvents deletes events created before cutoff (and their
// deliveries), at most batch at a time, and returns how many.
func purgeEvents(ctx context.Context, db db.Querier, cutoff time.Time, batch int) (int64, error) {
	var total int64
	for {
		tag, err := db.Exec(ctx, `
			DELETE FROM events WHERE (id, seller_id) IN (SELECT id, seller_id FROM events WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, batch)
		if err != nil {
			return total, fmt.Errorf("api: purge events: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}
