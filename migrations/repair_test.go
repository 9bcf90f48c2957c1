package migrations_test

import (
	"os"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/migrations"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// migrateWithFirst00003 migrates the database at url to 00004 with the
// first text of 00003, which a database could have been migrated with
// before the file was edited: the counter rows keep their primary key
// (series_id, fy) and gain a second unique index (series_id, fy,
// seller_id).
func migrateWithFirst00003(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, path := range map[string]string{
		"00001_init.sql":                        "00001_init.sql",
		"00002_require.sql":                     "00002_require.sql",
		"00003_invoice_counter_fk.sql":          "testdata/00003_invoice_counter_fk.first-text.sql",
		"00004_validate_invoice_counter_fk.sql": "00004_validate_invoice_counter_fk.sql",
	} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fsys[name] = &fstest.MapFile{Data: b}
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func uniqueIndexes(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT indexrelid::regclass::text FROM pg_index
		WHERE indrelid = 'series_counters'::regclass AND indisunique ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// firstUseRace takes the first number of a fresh year of one series from
// eight transactions at once and returns the errors.
func firstUseRace(t *testing.T, pool *pgxpool.Pool, s gst.Series, fy int) []error {
	t.Helper()
	ctx := t.Context()
	date := time.Date(fy, 6, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			<-start
			err := func() error {
				tx, err := pool.Begin(ctx)
				if err != nil {
					return err
				}
				defer tx.Rollback(ctx)
				if _, err := series.Next(ctx, tx, s, date, time.Now(), series.Options{LockTimeout: 10 * time.Second}); err != nil {
					return err
				}
				return tx.Commit(ctx)
			}()
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// oldFirstUseRace opens a fresh year of one series from eight transactions
// at once with the upsert the counter ran when 00003 had its first text
// (on conflict of its arbiter, the primary key then (series_id, fy)), and
// returns the errors.
func oldFirstUseRace(t *testing.T, pool *pgxpool.Pool, sellerID, seriesID int64, fy int) []error {
	t.Helper()
	ctx := t.Context()
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			<-start
			_, err := pool.Exec(ctx, `INSERT INTO series_counters (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at)
				VALUES ($1, $2, $3, 1, 99999, make_date($2, 6, 1), now())
				ON CONFLICT (series_id, fy) DO UPDATE SET last_serial = series_counters.last_serial + 1`, seriesID, fy, sellerID)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// TestRepairOfTheFirst00003: a database migrated with the first text of
// 00003 fails concurrent first uses of a year (the upsert's arbiter is one
// unique index, the race is lost on the other); the repair migration
// leaves it with the schema of a fresh one: one unique index, the primary
// key (series_id, fy, seller_id), the invoice key validated, and first
// uses that no longer fail.
func TestRepairOfTheFirst00003(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := emptyPool(t)
	migrateWithFirst00003(t, pool)
	if got := uniqueIndexes(t, pool); len(got) != 2 {
		t.Fatalf("the first 00003 left unique indexes %v, want two (the state to repair)", got)
	}
	// The seller and the series are written as the schema of then had them
	// (the package's code writes columns of later migrations); the race is
	// run on the old schema with the statement the counter used then.
	var sellerID, seriesID int64
	if err := pool.QueryRow(ctx, `INSERT INTO sellers (gstin, name, state_code) VALUES ('27AAPFU0939F1ZV', 'Pune Chai Co', '27') RETURNING id`).Scan(&sellerID); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO series (seller_id, code, doc_type, format, capacity) VALUES ($1, 'CH1', 'invoice', 'CH1/{FY}/{SEQ:5}', 99999) RETURNING id`, sellerID).Scan(&seriesID); err != nil {
		t.Fatal(err)
	}
	before := 0
	for fy := 2030; fy < 2036 && before == 0; fy++ {
		before = len(oldFirstUseRace(t, pool, sellerID, seriesID, fy))
	}
	t.Logf("before the repair, concurrent first uses failed %d times", before)

	if _, err := migrations.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if got := uniqueIndexes(t, pool); len(got) != 1 || got[0] != "series_counters_pkey" {
		t.Fatalf("after the repair: unique indexes %v, want only series_counters_pkey", got)
	}
	var cols string
	var valid bool
	if err := pool.QueryRow(ctx, `SELECT pg_get_indexdef('series_counters_pkey'::regclass),
		(SELECT convalidated FROM pg_constraint WHERE conname = 'invoices_counter_fkey')`).Scan(&cols, &valid); err != nil {
		t.Fatal(err)
	}
	if want := "(series_id, fy, seller_id)"; !strings.Contains(cols, want) || !valid {
		t.Fatalf("after the repair: primary key %s (want %s), invoice key validated %v", cols, want, valid)
	}
	s, err := series.Get(ctx, pool, sellerID, "CH1")
	if err != nil {
		t.Fatal(err)
	}
	for fy := 2040; fy < 2046; fy++ {
		if errs := firstUseRace(t, pool, s, fy); len(errs) > 0 {
			t.Fatalf("after the repair, first use of %d failed: %v", fy, errs)
		}
	}
	// A fresh database is not touched by the repair.
	fresh := dbtest.New(t)
	if got := uniqueIndexes(t, fresh); len(got) != 1 || got[0] != "series_counters_pkey" {
		t.Fatalf("fresh database: unique indexes %v", got)
	}
}

// emptyPool returns a pool on a fresh database without the schema
// (dbtest.NewEmptyURL), closed when the test ends, for tests that migrate
// step by step. It fails the test when the database cannot be reached.
func emptyPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), dbtest.NewEmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
