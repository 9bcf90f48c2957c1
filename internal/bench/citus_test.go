//go:build citus

package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/jackc/pgx/v5"
)

// TestCitusBaselinesDistributedBySeller runs the harness with two
// baselines on a Citus coordinator (make test-citus): both run on tables
// distributed by seller and co-located, pass their numbering check, and
// are printed beside invoiced with the ratio and PostgreSQL's CPU split
// into coordinator and workers; the interactive baseline's transactions
// each stay on one worker (no two-phase commit record).
func TestCitusBaselinesDistributedBySeller(t *testing.T) {
	dbtest.RequireCitus(t)
	t.Parallel()
	rep, cfg, out := runHarness(t, "--sellers", "4", "--series", "1", "--duration", "2s", "--concurrency", "4",
		"--baselines", "interactive,onestatement")
	if len(rep.Results) != 3 {
		t.Fatalf("%d results, want invoiced and two baselines:\n%s", len(rep.Results), out)
	}
	for _, r := range rep.Results[1:] {
		if r.Kind != "pgbench" || r.Series != 4 || !r.Checked || r.Problem != "" || r.OK == 0 || r.AbortedClients > 0 {
			t.Errorf("%s: %+v: want 4 series, checked contiguous, some invoices, no aborted client", r.Design, r)
		}
	}
	for _, r := range rep.Results {
		if r.CPU.Coordinator <= 0 || r.CPU.Workers <= 0 {
			t.Errorf("%s: CPU %+v: want the coordinator's and the workers' PostgreSQL CPU per invoice", r.Design, r.CPU)
		}
	}
	if s := out.String(); !strings.Contains(s, "(a) interactive") || !strings.Contains(s, "×") || !strings.Contains(s, "distributed by seller") || !strings.Contains(s, "coordinator ") {
		t.Errorf("the table lacks the baselines, the ratio, the note or the CPU by node:\n%s", s)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT logicalrelid::text, partmethod::text, column_to_column_name(logicalrelid, partkey), colocationid
		FROM pg_dist_partition WHERE logicalrelid IN ('bench.bench_counter'::regclass, 'bench.bench_invoice'::regclass) ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	type dist struct {
		Table, Method, Column string
		Colocation            int
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[dist])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Method != "h" || got[1].Method != "h" || got[0].Column != "seller" || got[1].Column != "seller" || got[0].Colocation != got[1].Colocation {
		t.Fatalf("the baseline tables are distributed as %+v: want both hash-distributed by seller, co-located", got)
	}

	// The interactive form runs each transaction on one worker: it adds
	// no record to pg_dist_transaction (test clusters keep them all).
	pgbench, err := findPgbench("")
	if err != nil {
		t.Fatal(err)
	}
	if err := resetBaseline(ctx, cfg.DatabaseURL, 8, 4); err != nil {
		t.Fatal(err)
	}
	twoPhase := func() (n int) {
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_dist_transaction`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := twoPhase()
	pr, _, err := pgbenchRun{bin: pgbench, dbURL: cfg.DatabaseURL, clients: 4, nseries: 8, nsellers: 4, duration: time.Second, script: "citus/interactive.sql"}.run(ctx)
	if err != nil || pr.Processed == 0 {
		t.Fatalf("pgbench interactive on Citus: %+v, %v", pr, err)
	}
	if after := twoPhase(); after != before {
		t.Errorf("%d transactions of the interactive baseline added %d two-phase commit records, want 0", pr.Processed, after-before)
	}
	b, _ := baselineByName("interactive")
	if _, problem, err := checkBaseline(ctx, cfg.DatabaseURL, b, true); err != nil || problem != "" {
		t.Errorf("interactive on Citus: %q, %v", problem, err)
	}
}
