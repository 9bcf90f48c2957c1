//go:build citus

package invoice_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestCitusMoveKeepsACommitJustBeforeItsSwitch: a write committed on the
// source worker just before a move (logical replication) blocks writes for
// its switch is on the target after the move, when the worker commits
// synchronously (synchronous_commit = on, PostgreSQL's default and what
// docs/scale-out.md requires). The control commits asynchronously: Citus's
// last catch-up waits for the source's WAL write position
// (pg_current_wal_lsn), which an asynchronous commit may not have reached
// yet, and the write can stay behind on the old placement and be dropped
// with it. The control's outcome is logged, not judged: the WAL writer
// may write it first.
func TestCitusMoveKeepsACommitJustBeforeItsSwitch(t *testing.T) {
	requireCitus(t)
	t.Parallel()
	for _, commit := range []string{"on", "off"} {
		t.Run("synchronous_commit="+commit, func(t *testing.T) {
			ctx := t.Context()
			pool := dbtest.New(t)
			seller := testfactory.Seller(t, pool, nil)
			s := testfactory.Series(t, pool, seller, nil)
			var shard int64
			if err := pool.QueryRow(ctx, `SELECT get_shard_id_for_distribution_column('series', $1::bigint)`, seller.ID).Scan(&shard); err != nil {
				t.Fatal(err)
			}
			// Citus names a move's replication slots and subscriptions
			// after its operation id, counted per database from the value
			// the template had: the test's own range keeps its names
			// apart from other databases' moves on the same workers.
			if _, err := pool.Exec(ctx, `SELECT setval('pg_catalog.pg_dist_operationid_seq', $1)`, rand.Int64N(1<<40)+1<<20); err != nil {
				t.Fatal(err)
			}
			from := workerOf(t, pool, seller.ID)
			to, workerURL := otherWorker(t, pool, from)
			src, err := pgx.Connect(ctx, workerURL)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close(context.WithoutCancel(ctx))
			writer, err := src.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer writer.Rollback(context.WithoutCancel(ctx))
			// The writer holds the group's shard metadata lock as every
			// write does, so the move waits for it to commit.
			if _, err := writer.Exec(ctx, `SELECT lock_shard_metadata(5, ARRAY[$1::bigint])`, shard); err != nil {
				t.Fatal(err)
			}
			moved := make(chan error, 1)
			go func() {
				_, err := pool.Exec(ctx, `SELECT citus_move_shard_placement($1, '127.0.0.1', $2, '127.0.0.1', $3, shard_transfer_mode => 'force_logical')`, shard, from, to)
				moved <- err
			}()
			testwait.Until(t, 60*time.Second, func() bool {
				var n int
				err := pool.QueryRow(ctx, `SELECT count(*) FROM get_rebalance_progress() WHERE shardid = $1 AND status = 'Final Catchup'`, shard).Scan(&n)
				return err == nil && n > 0 && locksAwaited(t, writer) > 0
			}, "the move to wait for the writer's lock for its last catch-up")
			const marker = "committed before the switch"
			if _, err := writer.Exec(ctx, `SELECT set_config('synchronous_commit', $1, true)`, commit); err != nil {
				t.Fatal(err)
			}
			if _, err := writer.Exec(ctx, fmt.Sprintf(`UPDATE %s SET shop = $1 WHERE id = $2`, pgx.Identifier{fmt.Sprintf("series_%d", shard)}.Sanitize()), marker, s.ID); err != nil {
				t.Fatal(err)
			}
			if err := writer.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-moved; err != nil {
				t.Fatalf("the move: %v", err)
			}
			var shop string
			if err := pool.QueryRow(ctx, `SELECT shop FROM series WHERE id = $1`, s.ID).Scan(&shop); err != nil {
				t.Fatal(err)
			}
			kept := shop == marker
			t.Logf("synchronous_commit = %s: the write committed before the switch was kept: %v", commit, kept)
			if commit == "on" && !kept {
				t.Errorf("a write committed synchronously before the move's switch is not on the target (shop %q)", shop)
			}
		})
	}
}

// otherWorker returns the port of the worker that is not port, and the URL
// of the test's database (pool's) on port.
func otherWorker(t *testing.T, pool *pgxpool.Pool, port int) (int, string) {
	t.Helper()
	other, at := 0, ""
	for _, w := range dbtest.CitusWorkers(t) {
		if w.Port == port {
			at = w.DatabaseURL(pool.Config().ConnConfig.Database)
		} else {
			other = w.Port
		}
	}
	if other == 0 || at == "" {
		t.Fatalf("no worker other than %d, or not %d itself", port, port)
	}
	return other, at
}

// locksAwaited returns how many shard metadata locks sessions of q's
// database wait for (zero when the read fails).
func locksAwaited(t *testing.T, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) int {
	var n int
	if err := q.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n); err != nil {
		t.Logf("pg_locks: %v", err)
		return 0
	}
	return n
}
