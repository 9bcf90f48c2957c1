package dbtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// LockWaits returns how many other sessions of the test database behind
// pool wait for a lock, or -1 when that cannot be read: for a test that
// holds a lock and waits (testwait.Until) until the transactions it
// started queue behind it. On Citus the waits are on the workers, so it
// counts the waiting transactions citus_lock_waits lists cluster-wide.
func LockWaits(t testing.TB, pool *pgxpool.Pool) int {
	waits := `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`
	if Citus(t) {
		waits = `SELECT count(DISTINCT waiting_gpid) FROM citus_lock_waits`
	}
	var n int
	if err := pool.QueryRow(context.Background(), waits).Scan(&n); err != nil {
		return -1
	}
	return n
}
