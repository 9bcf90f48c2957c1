package bench

import (
	"context"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/servetest"
	"github.com/jackc/pgx/v5"
)

// TestRunSpreadsOverSellers runs the harness end to end with --sellers 3
// against the real binary and a fresh database (on make test-citus, a
// Citus coordinator): it passes its numbering checks, every seller was
// created with its own key and series, and every seller's series issued.
func TestRunSpreadsOverSellers(t *testing.T) {
	t.Parallel()
	rep, cfg, _ := runHarness(t, "--sellers", "3", "--series", "2", "--duration", "2s", "--concurrency", "6", "--baselines", "none")
	if len(rep.Results) != 1 {
		t.Fatalf("%d results, want 1", len(rep.Results))
	}
	r := rep.Results[0]
	if r.Sellers != 3 || r.Series != 6 || !r.Checked || r.Problem != "" || r.OK == 0 {
		t.Fatalf("result %+v: want 3 sellers, 6 series, checked contiguous, some invoices", r)
	}
	gstins, err := cfg.SellerGSTINs()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var total int64
	for _, g := range gstins {
		var id, series, keys, invoices int64
		// One table a query, each by seller: on Citus a router query.
		err := conn.QueryRow(ctx, `SELECT id FROM sellers WHERE gstin = $1`, g).Scan(&id)
		for _, q := range []struct {
			sql string
			n   *int64
		}{
			{`SELECT count(*) FROM series WHERE seller_id = $1`, &series},
			{`SELECT count(*) FROM api_keys WHERE seller_id = $1`, &keys},
			{`SELECT count(*) FROM invoices WHERE seller_id = $1`, &invoices},
		} {
			if err == nil {
				err = conn.QueryRow(ctx, q.sql, id).Scan(q.n)
			}
		}
		if err != nil {
			t.Fatalf("seller %s: %v", g, err)
		}
		if series != 2 || keys != 1 || invoices == 0 {
			t.Errorf("seller %s: %d series, %d keys, %d invoices: want 2 series, 1 key, some invoices", g, series, keys, invoices)
		}
		total += invoices
	}
	if total != r.OK {
		t.Errorf("%d invoices stored over the sellers, %d acknowledged", total, r.OK)
	}
}

// testLog collects output for a failure message.
type testLog struct{ b []byte }

// runHarness runs the harness end to end with flags against the real
// binary and a fresh database, failing the test when Run does. It returns
// the report, the config it ran (the database's URL in DatabaseURL), and
// what Run printed.
func runHarness(t *testing.T, flags ...string) (Report, Config, *testLog) {
	t.Helper()
	bin, err := servetest.Build()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bin.Close() })
	dbURL := dbtest.NewURL(t)
	cfg, err := ParseFlags(append([]string{"--spawn", bin.Path, "--database-url", dbURL, "--out", t.TempDir()}, flags...))
	if err != nil {
		t.Fatal(err)
	}
	var out, progress testLog
	rep, err := Run(t.Context(), cfg, &out, &progress)
	if err != nil {
		t.Fatalf("Run: %v\n%s\n%s", err, &progress, &out)
	}
	return rep, cfg, &out
}

func (l *testLog) Write(p []byte) (int, error) { l.b = append(l.b, p...); return len(p), nil }
func (l *testLog) String() string              { return string(l.b) }
