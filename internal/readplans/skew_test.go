package readplans_test

import (
	"testing"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The skewed fixture is written with SQL, not issued: its hashes are not
// a chain (verifies report every record), which changes no plan.

// seedSeries fills series s of seller with n invoices of the year from
// 1 April 2026 to the day before start (one chain record, one event and
// a counter row for each), numbered <prefix><serial:7>.
func seedSeries(t testing.TB, pool *pgxpool.Pool, seller gst.Seller, s gst.Series, prefix string, n int) {
	t.Helper()
	ctx := t.Context()
	days := int(start.Sub(time.Date(2026, 4, 1, 0, 0, 0, 0, gst.IST)).Hours()/24) - 1
	args := pgx.NamedArgs{"seller": seller.ID, "series": s.ID, "n": n, "prefix": prefix, "days": days}
	for _, q := range []string{`
		INSERT INTO series_counters (seller_id, series_id, fy, last_serial, capacity, last_invoice_date, last_issued_at, chain_length, chain_head)
		VALUES (@seller, @series, 2026, @n::int, 9999999, date '2026-04-01' + @days::int, timestamptz '2026-04-01 04:30Z' + @days::int * interval '1 day',
			@n::int, sha256((@series::bigint || '-' || @n::int)::bytea))`, `
		INSERT INTO invoices (seller_id, series_id, fy, serial, number, invoice_date, issued_at, public_id, buyer_gstin, buyer_name,
			place_of_supply, items, taxable, cgst, sgst, igst, total)
		SELECT @seller, @series, 2026, s, @prefix::text || lpad(s::text, 7, '0'), date '2026-04-01' + (s::bigint * @days::int / @n::int)::int,
			timestamptz '2026-04-01 04:30Z' + (s::bigint * @days::int / @n::int)::int * interval '1 day', 'skew-' || @series::bigint || '-' || s,
			'29AAGCB7383J1Z4', 'Bangalore Traders', '29', '` + itemsJSON + `', 20, 0, 0, 1, 21
		FROM generate_series(1, @n::int) s`, `
		INSERT INTO chain_records (seller_id, series_id, fy, position, kind, serial, recorded_at, hash)
		SELECT seller_id, series_id, fy, serial, 'issue', serial, issued_at, sha256(public_id::bytea)
		FROM invoices WHERE seller_id = @seller AND series_id = @series`, `
		INSERT INTO events (seller_id, type, invoice_id, created_at)
		SELECT seller_id, 'invoice.issued', id, issued_at FROM invoices
		WHERE seller_id = @seller AND series_id = @series ORDER BY serial`,
	} {
		if _, err := pool.Exec(ctx, q, args); err != nil {
			t.Fatalf("seed %s: %v", s.Code, err)
		}
	}
}

// itemsJSON is the stored items of a seeded invoice.
const itemsJSON = `[{"hsn": "0902", "cgst": "0", "igst": "1", "sgst": "0", "total": "21", "taxable": "20", "gst_rate": "5", "quantity": "2", "unit_price": "10", "description": "Masala chai"}]`

// seedSmallSellers adds n sellers, each with series S1 of perSeller
// invoices (numbered S1/26-27/<serial:7>) with their chain records,
// counters and events, in a few statements.
func seedSmallSellers(t testing.TB, pool *pgxpool.Pool, n, perSeller int) {
	t.Helper()
	ctx := t.Context()
	args := pgx.NamedArgs{"n": n, "per": perSeller}
	for _, q := range []string{`
		INSERT INTO sellers (gstin, name, state_code)
		SELECT '27AAQPA' || lpad(g::text, 4, '0') || 'B1Z' || (g % 10), 'Small seller ' || g, '27' FROM generate_series(1, @n::int) g`, `
		INSERT INTO series (seller_id, code, doc_type, format, capacity)
		SELECT id, 'S1', 'invoice', 'S1/{FY}/{SEQ:7}', 9999999 FROM sellers WHERE name LIKE 'Small seller %'`, `
		INSERT INTO series_counters (seller_id, series_id, fy, last_serial, capacity, last_invoice_date, last_issued_at, chain_length, chain_head)
		SELECT sr.seller_id, sr.id, 2026, @per::int, 9999999, date '2026-06-01' + @per::int, timestamptz '2026-06-01 04:30Z' + @per::int * interval '1 day',
			@per::int, sha256('x'::bytea)
		FROM series sr JOIN sellers sl ON sl.id = sr.seller_id AND sl.name LIKE 'Small seller %'`, `
		INSERT INTO invoices (seller_id, series_id, fy, serial, number, invoice_date, issued_at, public_id, buyer_gstin, buyer_name,
			place_of_supply, items, taxable, cgst, sgst, igst, total)
		SELECT sr.seller_id, sr.id, 2026, s, 'S1/26-27/' || lpad(s::text, 7, '0'), date '2026-06-01' + s, timestamptz '2026-06-01 04:30Z' + s * interval '1 day',
			'small-' || sr.id || '-' || s, '29AAGCB7383J1Z4', 'Bangalore Traders', '29', '` + itemsJSON + `', 20, 0, 0, 1, 21
		FROM series sr JOIN sellers sl ON sl.id = sr.seller_id AND sl.name LIKE 'Small seller %', generate_series(1, @per::int) s`, `
		INSERT INTO chain_records (seller_id, series_id, fy, position, kind, serial, recorded_at, hash)
		SELECT seller_id, series_id, fy, serial, 'issue', serial, issued_at, sha256(public_id::bytea)
		FROM invoices WHERE public_id LIKE 'small-%'`, `
		INSERT INTO events (seller_id, type, invoice_id, created_at)
		SELECT seller_id, 'invoice.issued', id, issued_at FROM invoices WHERE public_id LIKE 'small-%' ORDER BY id`,
	} {
		if _, err := pool.Exec(ctx, q, args); err != nil {
			t.Fatalf("seed small sellers: %v", err)
		}
	}
}
