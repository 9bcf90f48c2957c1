package dbtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// A test with a fixed clock (an invoice date, a "today") that also meets
// the database's clock (a month must have ended by it to be locked, the
// period guards read it) would otherwise depend on the real date: a month
// locked by a test clock in December 2026 has not ended by a database
// clock of June 2026. SetClock makes the test database's clock follow the
// test's: the database's clock_timestamp() and now() then read the test's
// instant, and run on from there at the real pace.

// clockSchema holds the test database's clock: a skew added to the real
// one, and clock_timestamp() and now() that add it. It is found before
// pg_catalog on the database's search_path, so every statement of the
// service (and every plpgsql function, which resolves names when it runs)
// reads the skewed clock. Column defaults bound when the schema was
// migrated (DEFAULT now()) keep the real clock.
const clockSchema = `
CREATE SCHEMA IF NOT EXISTS invoiced_test_clock;
CREATE TABLE IF NOT EXISTS invoiced_test_clock.skew (d interval NOT NULL);
CREATE OR REPLACE FUNCTION invoiced_test_clock.clock_timestamp() RETURNS timestamptz
	LANGUAGE sql VOLATILE AS $$ SELECT pg_catalog.clock_timestamp() + coalesce((SELECT d FROM invoiced_test_clock.skew), '0') $$;
CREATE OR REPLACE FUNCTION invoiced_test_clock.now() RETURNS timestamptz
	LANGUAGE sql STABLE AS $$ SELECT pg_catalog.now() + coalesce((SELECT d FROM invoiced_test_clock.skew), '0') $$;
DO $$ BEGIN
	EXECUTE format('ALTER DATABASE %I SET search_path = "$user", public, invoiced_test_clock, pg_catalog', current_database());
END $$;`

// SetClock sets the clock of the test database behind pool (from New) to
// at: from now on its clock_timestamp() and now() read at plus the time
// passed since the call, in every session (pool's connections are
// replaced). Call it before the test's concurrent work starts; calling it
// again moves the clock. On Citus (make test-citus) the clock stays the
// real one (the workers would need the same schema, and Citus routes the
// calls itself): a test there still needs the real date past its months.
func SetClock(t testing.TB, pool *pgxpool.Pool, at time.Time) {
	t.Helper()
	if Citus(t) {
		t.Logf("dbtest: on Citus the database's clock stays the real one (the test clock is %s)", at.Format(time.RFC3339))
		return
	}
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatalf("dbtest: set clock: %v", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, clockSchema); err != nil {
		t.Fatalf("dbtest: set clock: %v", err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM invoiced_test_clock.skew`); err != nil {
		t.Fatalf("dbtest: set clock: %v", err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO invoiced_test_clock.skew SELECT $1::timestamptz - pg_catalog.clock_timestamp()`, at); err != nil {
		t.Fatalf("dbtest: set clock: %v", err)
	}
	// Sessions read the search path when they start.
	pool.Reset()
}
