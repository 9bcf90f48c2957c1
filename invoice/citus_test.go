//go:build citus

// Tests of issuing on Citus: make test-citus builds them with -tags citus
// and runs them on scripts/citus' cluster (a coordinator and two workers),
// whose test clusters keep every two-phase commit record in
// pg_dist_transaction (citus.recover_2pc_interval = -1).
package invoice_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// twoPhase returns how many distributed transactions committed in two
// phases (one record per worker prepared) the coordinator has recorded.
func twoPhase(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_dist_transaction`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// workerOf returns the worker port that holds seller's shard group.
func workerOf(t *testing.T, pool *pgxpool.Pool, seller int64) int {
	t.Helper()
	var port int
	if err := pool.QueryRow(t.Context(), `SELECT nodeport FROM pg_dist_shard_placement
		WHERE shardid = get_shard_id_for_distribution_column('series', $1::bigint)`, seller).Scan(&port); err != nil {
		t.Fatal(err)
	}
	return port
}

// TestCitusIssuingIsSingleShard: 64 sellers, whose shard groups lie on
// both workers, issue concurrently through one Committer in Citus mode:
// every series holds exactly 1..N, and no issuing transaction was a
// two-phase commit (pg_dist_transaction gains no record). The control, one
// transaction writing the counter rows of two sellers on different
// workers, adds records, so the count can fail the test.
//
// The Committer predicts, so every batch after a series' first is one
// delegated call of invoiced_issue_rows_v2 (docs/scale-out.md, "One call
// per batch"); the first is an ordinary routed transaction.
//
// It runs twice: batching per seller, and per shard (Config.CitusBatch:
// sellers whose rows share a shard may share a transaction). Each logs
// how many transactions it took.
func TestCitusIssuingIsSingleShard(t *testing.T) {
	dbtest.RequireCitus(t)
	t.Parallel()
	for _, perShard := range []bool{false, true} {
		t.Run(map[bool]string{false: "per-seller", true: "per-shard"}[perShard], func(t *testing.T) {
			t.Parallel()
			issueOnCitus(t, perShard)
		})
	}
}

func issueOnCitus(t *testing.T, perShard bool) {
	pool := dbtest.New(t)
	ctx := t.Context()
	const sellers, each = 64, 12
	type seller struct {
		s  gst.Seller
		se gst.Series
	}
	all := make([]seller, sellers)
	workers := map[int][]int64{}
	for i := range all {
		gstin := testfactory.GSTIN(t, fmt.Sprintf("27AAPFU%04dF1Z", i))
		all[i].s = testfactory.Seller(t, pool, &testfactory.SellerOpts{GSTIN: gstin})
		all[i].se = testfactory.Series(t, pool, all[i].s, nil)
		w := workerOf(t, pool, all[i].s.ID)
		workers[w] = append(workers[w], all[i].s.ID)
	}
	if len(workers) != 2 {
		t.Fatalf("the sellers' shard groups lie on %d workers, want 2: %v", len(workers), workers)
	}
	c, err := invoice.NewCommitter(pool, invoice.Config{Citus: true, CitusBatch: map[bool]invoice.CitusBatch{false: invoice.PerSeller, true: invoice.PerShard}[perShard], InFlight: 4,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	before := twoPhase(t, pool)
	errs := make(chan error, sellers*each)
	// Two waves: a series' first batch is an ordinary transaction, the
	// next ones (predicted) delegated calls.
	for range 2 {
		var wg sync.WaitGroup
		for _, sl := range all {
			for range each / 2 {
				wg.Go(func() {
					d := testfactory.Draft(t, sl.s, sl.se, now, nil)
					if r := c.Issue(ctx, invoice.IssueRequest{Seller: sl.s, Series: sl.se, Draft: d}); r.Err != nil {
						errs <- fmt.Errorf("seller %d: %w", sl.s.ID, r.Err)
					}
				})
			}
		}
		wg.Wait()
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := twoPhase(t, pool) - before; got != 0 {
		t.Errorf("issuing made %d two-phase commit records, want 0", got)
	}
	for _, sl := range all {
		var n, lo, hi, distinct int64
		if err := pool.QueryRow(ctx, `SELECT count(*), min(serial), max(serial), count(DISTINCT serial) FROM invoices
			WHERE seller_id = $1 AND series_id = $2`, sl.s.ID, sl.se.ID).Scan(&n, &lo, &hi, &distinct); err != nil {
			t.Fatal(err)
		}
		if n != each || lo != 1 || hi != each || distinct != each {
			t.Errorf("seller %d: %d invoices, serials %d..%d (%d distinct), want exactly 1..%d", sl.s.ID, n, lo, hi, distinct, each)
		}
	}
	st := c.Stats()
	t.Logf("per shard %v: %d transactions for %d invoices of %d sellers (%d delegated calls)", perShard, st.Batches, sellers*each, sellers, st.Delegated)
	if st.Delegated == 0 || st.Delegated != st.Predicted {
		t.Errorf("stats %+v: want the predicted batches, and only they, sent as delegated calls", st)
	}

	// The control: one transaction that writes two sellers' rows on two
	// workers is a two-phase commit, recorded.
	var a, b int64
	for _, ids := range workers {
		if a == 0 {
			a = ids[0]
		} else {
			b = ids[0]
		}
	}
	before = twoPhase(t, pool)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{a, b} {
		if _, err := tx.Exec(ctx, `UPDATE series SET shop = shop WHERE seller_id = $1`, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := twoPhase(t, pool) - before; got == 0 {
		t.Fatal("the control, a transaction over two workers, left no two-phase commit record: the count proves nothing")
	}
}

// TestCitusIssueBatchIsDelegated: the call of invoiced_issue_rows_v2 for a
// seller is planned by the coordinator as one task on the worker that holds
// the seller's shard group, the call itself sent there whole: delegation
// (create_distributed_function with its seller argument, by invoiced
// migrate). Without it every statement inside would be a hop of its own.
func TestCitusIssueBatchIsDelegated(t *testing.T) {
	dbtest.RequireCitus(t)
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	s := testfactory.Seller(t, pool, nil)
	// The call as the product sends it (named notation), the seller its
	// only argument that is not NULL: planning reads nothing else.
	args := make([]any, invoice.IssueRowsArgs)
	args[0] = s.ID
	rows, err := pool.Query(ctx, "EXPLAIN (COSTS OFF) "+invoice.IssueRowsSQL, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	want := fmt.Sprintf("port=%d ", workerOf(t, pool, s.ID))
	if !strings.Contains(plan, "Task Count: 1") || !strings.Contains(plan, want) || strings.Contains(plan, "Seq Scan") {
		t.Fatalf("the call is not one task on the seller's worker (%s):\n%s", want, plan)
	}
}
