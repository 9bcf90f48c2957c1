package migrations_test

import (
	"os"
	"testing"

	"github.com/invoiced/invoiced/migrations"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// TestSellerColumnsBackfilledFrom00016: a database at 00016 with rows in
// every table 00017 extends (chains longer than one backfill batch, of two
// sellers) migrates to the latest version with every row naming its
// series' (or event's) seller, the column NOT NULL, and every foreign key
// and seller check validated, so the batched backfill (00018), the catch-up (00019) and the
// foreign keys validated apart (00021) leave the schema as one transaction
// would have.
func TestSellerColumnsBackfilledFrom00016(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := emptyPool(t)
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, os.DirFS("."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 16); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for i, gstin := range []string{"27AAPFU0939F1ZV", "29AAGCB7383J1Z4"} {
		var sellerID, seriesID int64
		if err := pool.QueryRow(ctx, `INSERT INTO sellers (gstin, name, state_code) VALUES ($1, 'Chai', left($1, 2)) RETURNING id`, gstin).Scan(&sellerID); err != nil {
			t.Fatal(err)
		}
		if err := pool.QueryRow(ctx, `INSERT INTO series (seller_id, code, doc_type, format, capacity) VALUES ($1, 'CH1', 'invoice', 'CH1/{FY}/{SEQ:5}', 99999) RETURNING id`, sellerID).Scan(&seriesID); err != nil {
			t.Fatal(err)
		}
		// 25,003 records in one year (three batches of 10,000), 7 in the next.
		for fy, n := range map[int]int{2026: 25003 - i, 2027: 7} {
			exec(`INSERT INTO series_counters (series_id, fy, last_serial, capacity, last_invoice_date, last_issued_at, chain_length, seller_id)
				VALUES ($1, $2, $3, 99999, make_date($2, 4, 1), now(), $3, $4)`, seriesID, fy, n, sellerID)
			exec(`INSERT INTO chain_records (series_id, fy, position, kind, serial, recorded_at, hash)
				SELECT $1, $2, g, 'issue', g, now(), sha256(g::text::bytea) FROM generate_series(1, $3::int) g`, seriesID, fy, n)
		}
		exec(`INSERT INTO series_openings (series_id, fy, last_serial, last_invoice_date, last_number, declared_at, declared_by)
			VALUES ($1, 2025, 12, '2026-03-31', 'CH1/25-26/00012', now(), 'test')`, seriesID)
		exec(`INSERT INTO series_leases (lease_id, series_id, device_id, leased_at, leased_by, start_fy, start_serial)
			VALUES ('ls_' || repeat($2, 26), $1, 'POS-1', now(), 'test', 2027, 8)`, seriesID, []string{"a", "b"}[i])
		exec(`INSERT INTO webhooks (public_id, seller_id, url, events, secret) VALUES ('wh_' || $1::bigint, $1, 'https://example.com/h', ARRAY['invoice.issued'], 's')`, sellerID)
		exec(`WITH e AS (INSERT INTO events (seller_id, type, invoice_id, created_at)
				SELECT $1::bigint, 'invoice.issued', $1::bigint * 1000 + g, now() FROM generate_series(1, 3) g RETURNING id)
			INSERT INTO webhook_deliveries (event_id, webhook_id) SELECT e.id, w.id FROM e, webhooks w WHERE w.seller_id = $1::bigint`, sellerID)
	}

	if _, err := migrations.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	for table, owner := range map[string]string{
		"chain_records":      `SELECT seller_id FROM series WHERE id = x.series_id`,
		"series_openings":    `SELECT seller_id FROM series WHERE id = x.series_id`,
		"series_leases":      `SELECT seller_id FROM series WHERE id = x.series_id`,
		"webhook_deliveries": `SELECT seller_id FROM events WHERE id = x.event_id`,
	} {
		var rows, wrong int
		if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE x.seller_id IS DISTINCT FROM (`+owner+`)) FROM `+table+` x`).Scan(&rows, &wrong); err != nil {
			t.Fatal(err)
		}
		if rows == 0 || wrong != 0 {
			t.Errorf("%s: %d of %d rows do not name their seller", table, wrong, rows)
		}
		var notNull bool
		if err := pool.QueryRow(ctx, `SELECT attnotnull FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'seller_id'`, table).Scan(&notNull); err != nil {
			t.Fatal(err)
		}
		if !notNull {
			t.Errorf("%s.seller_id is nullable", table)
		}
	}
	var invalid []string
	if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(conrelid::regclass || '.' || conname ORDER BY conname), '{}') FROM pg_constraint
		WHERE NOT convalidated AND connamespace = 'public'::regnamespace AND (contype = 'f' OR conname LIKE '%seller%')`).Scan(&invalid); err != nil {
		t.Fatal(err)
	}
	if len(invalid) != 0 {
		t.Errorf("constraints left NOT VALID: %v", invalid)
	}
}
