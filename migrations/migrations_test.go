package migrations_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/migrations"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestUpConcurrentlyAndTwice migrates one empty database from four
// processes' worth of pools at once, then again: every call succeeds, all
// report the same version, and the schema is there once.
func TestUpConcurrentlyAndTwice(t *testing.T) {
	t.Parallel()
	url := dbtest.NewEmptyURL(t)
	ctx := t.Context()
	const n = 4
	versions := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			pool, err := pgxpool.New(ctx, url)
			if err != nil {
				errs[i] = err
				return
			}
			defer pool.Close()
			versions[i], errs[i] = migrations.Up(ctx, pool)
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("concurrent migration %d: %v", i, errs[i])
		}
		if versions[i] != versions[0] || versions[0] < 1 {
			t.Fatalf("versions %v", versions)
		}
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	again, err := migrations.Up(ctx, pool)
	if err != nil || again != versions[0] {
		t.Fatalf("second run: version %d, %v; want %d", again, err, versions[0])
	}
	var tables int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename IN
		('sellers', 'series', 'series_counters', 'invoices', 'chain_records', 'api_keys', 'idempotency_keys')`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 7 {
		t.Fatalf("%d of 7 tables exist", tables)
	}
}

func TestChecksumIsStable(t *testing.T) {
	t.Parallel()
	if a, b := migrations.Checksum(), migrations.Checksum(); a != b || len(a) != 16 {
		t.Fatalf("checksum %q then %q", a, b)
	}
}

// TestInvoiceNeedsItsCounterRow: the database refuses an invoice without
// the counter row of its series, year and seller (00003): one naming
// another seller's series, or a year its series has no counter for; and
// it refuses to delete a counter row that numbered invoices. An invoice
// of the counter's own seller and year is taken, and the key is validated
// (00004).
func TestInvoiceNeedsItsCounterRow(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	var a, b, s int64
	err := pool.QueryRow(ctx, `INSERT INTO sellers (gstin, name, state_code) VALUES ('24AAQCA8719H1ZC', 'A', '24') RETURNING id`).Scan(&a)
	if err == nil {
		err = pool.QueryRow(ctx, `INSERT INTO sellers (gstin, name, state_code) VALUES ('27AAQCA8719H1ZA', 'B', '27') RETURNING id`).Scan(&b)
	}
	if err == nil {
		err = pool.QueryRow(ctx, `INSERT INTO series (seller_id, code, doc_type, format, capacity) VALUES ($1, 'CH', 'invoice', 'CH{SEQ}', 99999) RETURNING id`, a).Scan(&s)
	}
	if err == nil {
		_, err = pool.Exec(ctx, `INSERT INTO series_counters (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at)
			VALUES ($1, 2026, $2, 1, 99999, '2026-11-30', now())`, s, a)
	}
	if err != nil {
		t.Fatal(err)
	}
	var pg *pgconn.PgError
	if _, err := pool.Exec(ctx, `INSERT INTO series_counters (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at)
		VALUES ($1, 2025, $2, 1, 99999, '2026-03-30', now())`, s, b); violated(err) != "series_counters_series_owner_fkey" {
		t.Fatalf("a counter row of seller B for seller A's series: %v, want a foreign key violation", err)
	}
	insert := func(seller int64, fy, serial int) error {
		_, err := pool.Exec(ctx, `INSERT INTO invoices (seller_id, series_id, fy, serial, number, invoice_date, issued_at, public_id,
			place_of_supply, items, taxable, cgst, sgst, igst, total)
			VALUES ($1, $2, $3, $4, $5, '2026-11-30', now(), $6, '24', '[]', 0, 0, 0, 0, 0)`,
			seller, s, fy, serial, fmt.Sprintf("CH%d", serial), fmt.Sprintf("p%d-%d-%d", seller, fy, serial))
		return err
	}
	for _, bad := range []struct {
		name         string
		seller, year int
	}{{"seller B in seller A's series", int(b), 2026}, {"a year without a counter row", int(a), 2025}} {
		if err := insert(int64(bad.seller), bad.year, 1); !errors.As(err, &pg) || pg.Code != "23503" || violated(err) != "invoices_counter_fkey" {
			t.Fatalf("invoice of %s: %v, want a foreign key violation", bad.name, err)
		}
	}
	if err := insert(a, 2026, 1); err != nil {
		t.Fatalf("invoice of seller A in its own series and counted year: %v", err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM series_counters WHERE series_id = $1`, s); !errors.As(err, &pg) || pg.Code != "23503" {
		t.Fatalf("deleting a counter row with invoices: %v, want a foreign key violation", err)
	}
	var valid bool
	if err := pool.QueryRow(ctx, `SELECT convalidated FROM pg_constraint WHERE conname = 'invoices_counter_fkey'`).Scan(&valid); err != nil || !valid {
		t.Fatalf("the key is not validated (00004): %v %v", valid, err)
	}
}

// TestVersionsOfAnEmptyDatabase: Versions reads an unmigrated database
// without creating goose's table (a serving role may not be allowed to).
func TestVersionsOfAnEmptyDatabase(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), dbtest.NewEmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx := t.Context()
	current, target, err := migrations.Versions(ctx, pool)
	if err != nil || current != 0 || target < 4 {
		t.Fatalf("Versions = %d, %d, %v; want 0 and the newest", current, target, err)
	}
	var table *string
	if err := pool.QueryRow(ctx, `SELECT to_regclass('goose_db_version')::text`).Scan(&table); err != nil || table != nil {
		t.Fatalf("goose_db_version after Versions: %v %v", table, err)
	}
	if _, err := migrations.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if current, target2, err := migrations.Versions(ctx, pool); err != nil || current != target || target2 != target {
		t.Fatalf("after Up: Versions = %d, %d, %v; want %d twice", current, target2, err, target)
	}
}

// violated returns the constraint err violated (on Citus without the
// shard's suffix, as db.Violated reads it), or "".
func violated(err error) string {
	v, _ := db.Violated(err)
	return v.Constraint
}
