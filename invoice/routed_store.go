package invoice

import (
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/invoiced/invoiced/document"
)

// This file holds the routed form of the issuing writes
// (series.Options.Routed, Config.Citus; docs/scale-out.md). Citus routes
// an INSERT … VALUES whose rows name one seller to that seller's worker,
// and an INSERT … SELECT between co-located tables filtered by the seller
// too; both commit there in one phase. It runs an INSERT … SELECT from
// unnest, or from a CTE's rows, through the coordinator, copying the rows,
// and a copy always commits in two phases. So the routed form writes
// invoices and chain records as VALUES, idempotency keys as an INSERT …
// SELECT from invoices, and events, whose ids come from a sequence (which
// keeps Citus from pushing the INSERT … SELECT down), as VALUES in a
// second round trip, only when a seller of the transaction subscribes.
// The statements work on plain PostgreSQL too (the tests run them there).

// queueRouted queues on b, in the routed form, the statements inserting
// w's invoices (taking their ids), idempotency keys and chain records, and
// the read of which of w's sellers subscribe to invoice.issued, into
// subscribed.
func (w *writes) queueRouted(b *pgx.Batch, subscribed map[int64]bool) {
	var sql strings.Builder
	sql.WriteString(invoiceValues.prefix)
	args := make([]any, 0, len(invoiceTable)*len(w.invoices))
	type serialKey struct {
		series int64
		fy     int32
		serial int64
	}
	at := make(map[serialKey]*document.Invoice, len(w.all))
	sellers := map[int64]bool{}
	for i := range w.invoices {
		r := &w.invoices[i]
		args = invoiceValues.row(&sql, args, r)
		at[serialKey{r.seriesID, r.fy, r.serial}] = w.all[i]
		sellers[r.sellerID] = true
	}
	sql.WriteString(` RETURNING id, series_id, fy, serial`)
	b.Queue(sql.String(), args...).Query(func(rows pgx.Rows) error {
		n := 0
		for rows.Next() {
			var k serialKey
			var id int64
			if err := rows.Scan(&id, &k.series, &k.fy, &k.serial); err != nil {
				return err
			}
			inv, ok := at[k]
			if !ok {
				return fmt.Errorf("invoice: an id for serial %d of series %d not inserted", k.serial, k.series)
			}
			inv.ID = id
			n++
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if n != len(w.all) {
			return fmt.Errorf("invoice: %d ids for %d invoices", n, len(w.all))
		}
		return nil
	})
	if len(w.keys) > 0 {
		b.Queue(routedKeysSQL, arrays(keyTable, w.keys)...)
	}
	sql.Reset()
	sql.WriteString(chainValues.prefix)
	args = make([]any, 0, len(chainTable)*len(w.chain))
	for i := range w.chain {
		args = chainValues.row(&sql, args, &w.chain[i])
	}
	b.Queue(sql.String(), args...)
	ids := make([]int64, 0, len(sellers))
	for id := range sellers {
		ids = append(ids, id)
	}
	queueSubscribed(b, ids, EventIssued, subscribed)
}

// routedKeysSQL inserts the idempotency keys of the arrays of keyTable's
// columns, as an INSERT … SELECT from invoices filtered by the keys'
// sellers, which Citus runs on their worker.
var routedKeysSQL = `INSERT INTO idempotency_keys (seller_id, key, request_hash, invoice_id)
			SELECT i.seller_id, k.key, k.hash, i.id FROM invoices i
			JOIN ` + unnestOf(keyTable, 1, "k") + `
				ON i.seller_id = k.seller_id AND i.series_id = k.series_id AND i.fy = k.fy AND i.serial = k.serial
			WHERE i.seller_id = ANY (` + paramOf(keyTable, 1, "seller_id") + `::bigint[])`

// queueSubscribed queues on b the read of which of sellers have a live
// webhook subscribed to event type typ, into subscribed.
func queueSubscribed(b *pgx.Batch, sellers []int64, typ string, subscribed map[int64]bool) {
	b.Queue(`SELECT DISTINCT w.seller_id FROM webhooks w
		WHERE w.seller_id = ANY ($1::bigint[]) AND w.deleted_at IS NULL AND $2::text = ANY (w.events)`, sellers, typ).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					return err
				}
				subscribed[id] = true
			}
			return rows.Err()
		})
}

// queueEvents queues on b the events of type typ of invs (ids known) whose
// seller is subscribed, and their deliveries, and reports whether it
// queued anything. The deliveries are an INSERT … SELECT from events and
// webhooks, co-located and filtered by the sellers: Citus runs it on the
// sellers' worker.
func queueEvents(b *pgx.Batch, invs []*document.Invoice, typ string, at func(*document.Invoice) time.Time, subscribed map[int64]bool) bool {
	var sql strings.Builder
	sql.WriteString(eventValues.prefix)
	var args []any
	var sellers, ids []int64
	seen := map[int64]bool{}
	for _, inv := range invs {
		if !subscribed[inv.SellerID] {
			continue
		}
		args = eventValues.row(&sql, args, &eventRow{sellerID: inv.SellerID, typ: typ, invoiceID: inv.ID, at: at(inv)})
		ids = append(ids, inv.ID)
		if !seen[inv.SellerID] {
			seen[inv.SellerID] = true
			sellers = append(sellers, inv.SellerID)
		}
	}
	if len(ids) == 0 {
		return false
	}
	b.Queue(sql.String(), args...)
	b.Queue(`INSERT INTO webhook_deliveries (event_id, webhook_id, seller_id)
		SELECT e.id, w.id, e.seller_id FROM events e JOIN webhooks w ON w.seller_id = e.seller_id
		WHERE e.seller_id = ANY ($1::bigint[]) AND w.seller_id = ANY ($1::bigint[])
			AND e.type = $2 AND e.invoice_id = ANY ($3::bigint[])
			AND w.deleted_at IS NULL AND $2::text = ANY (w.events)`, sellers, typ, ids)
	return true
}
