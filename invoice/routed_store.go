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

// valuesRow appends to sql one row of VALUES: a placeholder per cast,
// numbered after the args already taken, and appends vals to args.
func valuesRow(sql *strings.Builder, args []any, casts []string, vals ...any) []any {
	if len(args) > 0 && !strings.HasSuffix(sql.String(), "VALUES ") {
		sql.WriteString(", ")
	}
	sql.WriteByte('(')
	for i, c := range casts {
		if i > 0 {
			sql.WriteString(", ")
		}
		if strings.HasPrefix(c, "'") { // a constant, not a parameter
			sql.WriteString(c)
			continue
		}
		fmt.Fprintf(sql, "$%d::%s", len(args)+1, c)
		args = append(args, vals[0])
		vals = vals[1:]
	}
	sql.WriteByte(')')
	return args
}

var invoiceCasts = []string{"bigint", "bigint", "int", "bigint", "text", "date", "timestamptz", "text",
	"text", "text", "text", "text", "date", "text::jsonb",
	"text::numeric", "text::numeric", "text::numeric", "text::numeric", "text::numeric", "text", "text::jsonb", "text::jsonb"}

var chainCasts = []string{"bigint", "int", "bigint", "'issue'", "bigint", "timestamptz", "bytea", "bigint"}

// queueRouted queues on b, in the routed form, the statements inserting
// w's invoices (taking their ids), idempotency keys and chain records, and
// the read of which of w's sellers subscribe to invoice.issued, into
// subscribed.
func (w *writes) queueRouted(b *pgx.Batch, subscribed map[int64]bool) {
	var sql strings.Builder
	sql.WriteString(`INSERT INTO invoices (seller_id, series_id, fy, serial, number, invoice_date, issued_at, public_id,
		buyer_gstin, buyer_name, place_of_supply, original_number, original_date, items,
		taxable, cgst, sgst, igst, total, original_external_reason, buyer_address, ship_to) VALUES `)
	var args []any
	type serialKey struct {
		series int64
		fy     int32
		serial int64
	}
	at := make(map[serialKey]*document.Invoice, len(w.all))
	sellers := map[int64]bool{}
	for i, r := range w.invoices {
		args = valuesRow(&sql, args, invoiceCasts, r.sellerID, r.seriesID, r.fy, r.serial, r.number, r.date, r.issuedAt, r.publicID,
			r.buyerGSTIN, r.buyerName, r.placeOfSupply, r.originalNumber, r.originalDate, r.items,
			r.taxable, r.cgst, r.sgst, r.igst, r.total, r.originalExternal, r.buyerAddress, r.shipTo)
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
		b.Queue(`INSERT INTO idempotency_keys (seller_id, key, request_hash, invoice_id)
			SELECT i.seller_id, k.key, k.hash, i.id FROM invoices i
			JOIN unnest($1::bigint[], $2::bigint[], $3::int[], $4::bigint[], $5::text[], $6::bytea[])
				AS k(seller_id, series_id, fy, serial, key, hash)
				ON i.seller_id = k.seller_id AND i.series_id = k.series_id AND i.fy = k.fy AND i.serial = k.serial
			WHERE i.seller_id = ANY ($1::bigint[])`, keyColumns(w.keys)...)
	}
	sql.Reset()
	sql.WriteString(`INSERT INTO chain_records (series_id, fy, position, kind, serial, recorded_at, hash, seller_id) VALUES `)
	args = nil
	for _, c := range w.chain {
		args = valuesRow(&sql, args, chainCasts, c.seriesID, c.fy, c.position, c.serial, c.at, c.hash, c.sellerID)
	}
	b.Queue(sql.String(), args...)
	ids := make([]int64, 0, len(sellers))
	for id := range sellers {
		ids = append(ids, id)
	}
	queueSubscribed(b, ids, EventIssued, subscribed)
}

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
	sql.WriteString(`INSERT INTO events (seller_id, type, invoice_id, created_at) VALUES `)
	var args []any
	var sellers, ids []int64
	seen := map[int64]bool{}
	for _, inv := range invs {
		if !subscribed[inv.SellerID] {
			continue
		}
		args = valuesRow(&sql, args, []string{"bigint", "text", "bigint", "timestamptz"}, inv.SellerID, typ, inv.ID, at(inv))
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
