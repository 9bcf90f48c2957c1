package migrations_test

import (
	"context"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/migrations"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestUpConcurrentlyAndTwice migrates one empty database from four
// processes' worth of pools at once, then again: every call succeeds, all
// report the same version, and the schema is there once.
func TestUpConcurrentlyAndTwice(t *testing.T) {
	t.Parallel()
	url := dbtest.NewEmptyURL(t)
	ctx := context.Background()
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
