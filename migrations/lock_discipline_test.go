package migrations_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// issuingLocks are the table locks an issuing transaction takes (the
// writes, the reads of the guards and triggers), for a probe that works
// on every schema version from 00001 on.
var issuingLocks = []struct{ table, mode string }{
	{"sellers", "ACCESS SHARE"}, {"series", "ACCESS SHARE"}, {"series_leases", "ACCESS SHARE"},
	{"period_locks", "ACCESS SHARE"}, {"series_counters", "ROW EXCLUSIVE"}, {"invoices", "ROW EXCLUSIVE"},
	{"chain_records", "ROW EXCLUSIVE"}, {"idempotency_keys", "ROW EXCLUSIVE"}, {"events", "ROW EXCLUSIVE"},
}

// TestMigrationsNeverStopIssuingBehindAReader: one idle transaction that
// has read invoices (a stalled export) holds ACCESS SHARE on it for as
// long as it likes. While the whole chain, 00001 to the latest, is
// applied behind it, a probe that takes issuing's table locks every 50 ms
// never waits more than 1.5 s: no migration holds a lock issuing needs
// while it waits for the reader. The migration either finishes or fails
// naming the reader (its pid and query); once the reader ends, it
// finishes.
func TestMigrationsNeverStopIssuingBehindAReader(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := emptyPool(t)
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, os.DirFS("."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 1); err != nil {
		t.Fatal(err)
	}
	reader, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx)
	var readerPID int
	if err := reader.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&readerPID); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec(ctx, `SELECT count(*) FROM invoices /* stalled export */`); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var mu sync.Mutex
	var worst time.Duration
	var worstAt string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			start := time.Now()
			err := probe(ctx, pool)
			if d := time.Since(start); d > worst {
				mu.Lock()
				worst, worstAt = d, fmt.Sprintf("at %s (%v)", start.Format("15:04:05.000"), err)
				mu.Unlock()
			}
		}
	}()
	_, upErr := migrations.Up(ctx, pool)
	close(stop)
	wg.Wait()
	if worst > 1500*time.Millisecond {
		t.Errorf("an issuing probe waited %v %s while the migrations ran behind an idle reader; want at most 1.5 s", worst, worstAt)
	}
	if upErr != nil && (!strings.Contains(upErr.Error(), fmt.Sprint(readerPID)) || !strings.Contains(upErr.Error(), "stalled export")) {
		t.Errorf("the migration failed without naming the reader (pid %d, its query): %v", readerPID, upErr)
	}
	t.Logf("behind the reader: %v", upErr)
	if err := reader.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("after the reader ended: %v", err)
	}
}

// probe takes, in one transaction, the table locks issuing takes, of the
// tables that exist yet, and commits.
func probe(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, l := range issuingLocks {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, l.table).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				continue
			}
			if _, err := tx.Exec(ctx, `LOCK TABLE `+l.table+` IN `+l.mode+` MODE`); err != nil {
				return err
			}
		}
		return nil
	})
}
