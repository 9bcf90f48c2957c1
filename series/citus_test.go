//go:build citus

// Tests of the counter rows on Citus: make test-citus builds them with
// -tags citus and runs them on scripts/citus' cluster.
package series_test

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestCitusLeaseGuardKeepsNoPlans: the lease guard (a trigger on the
// counter rows, run on the worker that holds them) does not grow the
// worker's backend with each counter write. Its read of series_leases
// names the seller through NEW; with plpgsql's generic plan, Citus 13.2
// built that read's shard plan again on every execution and kept each one
// in the cached plan, about 50 kB a write, never freed (migration 00030
// makes the read custom-planned). The test writes one counter row 300
// times from a session on its worker, in statements planned with their
// values (so that only the trigger's read could be generic), and then
// reads that session's cached plans: 300 kept shard plans would be about
// 15 MB.
func TestCitusLeaseGuardKeepsNoPlans(t *testing.T) {
	dbtest.RequireCitus(t)
	t.Parallel()
	ctx := t.Context()
	coordinator := dbtest.NewURL(t)
	pool, err := pgxpool.New(ctx, coordinator)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	seller := testfactory.Seller(t, pool, nil)
	s := testfactory.Series(t, pool, seller, nil)
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, gst.IST)
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := series.Next(ctx, tx, s, now, now, series.Options{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var host string
	var port int
	if err := pool.QueryRow(ctx, `SELECT nodename, nodeport FROM pg_dist_shard_placement
		WHERE shardid = get_shard_id_for_distribution_column('series_counters', $1::bigint)`, seller.ID).Scan(&host, &port); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(coordinator)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	worker, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close(ctx)
	write := fmt.Sprintf(`UPDATE series_counters SET chain_length = chain_length WHERE seller_id = %d AND series_id = %d`,
		seller.ID, s.ID)
	for range 300 {
		tag, err := worker.Exec(ctx, write, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		if tag.RowsAffected() != 1 {
			t.Fatalf("%s: %d rows, want 1", write, tag.RowsAffected())
		}
	}
	var kept int64
	var biggest string
	if err := worker.QueryRow(ctx, `SELECT coalesce(sum(total_bytes), 0),
			coalesce((array_agg(coalesce(ident, name) ORDER BY total_bytes DESC))[1], '')
		FROM pg_backend_memory_contexts WHERE name = 'CachedPlan'`).Scan(&kept, &biggest); err != nil {
		t.Fatal(err)
	}
	if kept > 1<<20 {
		t.Fatalf("after 300 counter writes the worker's session keeps %d bytes of cached plans (the largest: %q): a plan kept per write", kept, biggest)
	}
}
