package migrations_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// TestConcurrentIndexWaitsForOlderTransactions: CREATE INDEX CONCURRENTLY
// (00016) waits for every transaction older than its build, which holds
// no lock issuing needs. A stalled export (a REPEATABLE READ transaction
// that read invoices, begun before migrate) is open while 00016 runs and
// commits 3 s after the build is seen waiting for it: the migration waits
// and finishes in its first attempt, as it did before the runner's 1 s
// lock_timeout, instead of timing out and being retried (or given up).
func TestConcurrentIndexWaitsForOlderTransactions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := emptyPool(t)
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, os.DirFS("."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 15); err != nil {
		t.Fatal(err)
	}
	export, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer export.Rollback(ctx)
	var exportPID int
	if err := export.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&exportPID); err != nil {
		t.Fatal(err)
	}
	if _, err := export.Exec(ctx, `SELECT count(*) FROM invoices /* stalled export */`); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var retries []string
	done := make(chan struct{})
	var upErr error
	go func() {
		defer close(done)
		_, upErr = migrations.UpWith(ctx, pool, migrations.Options{Logf: func(format string, args ...any) {
			mu.Lock()
			retries = append(retries, fmt.Sprintf(format, args...))
			mu.Unlock()
		}})
	}()
	// Wait until a session waits for the export, then keep the export
	// open 3 s more (three of the runner's lock timeouts) and commit.
	seen := time.Now().Add(2 * time.Minute)
	for {
		var waiting int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, exportPID).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case <-done:
			t.Fatalf("migrate ended (%v) before anything waited for the older export: the test proves nothing", upErr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(seen) {
			t.Fatal("no session waited for the export within 2 minutes")
		}
	}
	select {
	case <-done:
	case <-time.After(3 * time.Second):
	}
	if err := export.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if upErr != nil {
		t.Fatalf("migrate behind an export open 3 s: %v", upErr)
	}
	if len(retries) > 0 {
		t.Errorf("migrate retried behind an export that blocks no lock issuing needs; it should have waited: %s", strings.Join(retries, " | "))
	}
	var valid bool
	if err := pool.QueryRow(ctx, `SELECT indisvalid FROM pg_index WHERE indexrelid = 'invoices_routed_public_id_key'::regclass`).Scan(&valid); err != nil || !valid {
		t.Fatalf("invoices_routed_public_id_key after migrate: valid %v (%v)", valid, err)
	}
}
