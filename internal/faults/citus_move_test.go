//go:build citus

package faults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/jackc/pgx/v5"
)

// TestCitusMovesASingleNodeDatabase follows docs/scale-out.md's move of an
// existing database to Citus: a database migrated and filled by `invoiced
// serve` on plain PostgreSQL (no citus extension; the coordinator's
// PostgreSQL stands in for the single node) gets the extension and two
// workers, `invoiced migrate` distributes its tables with their rows, the
// coordinator's local copies are truncated, and `invoiced serve`,
// restarted, goes on issuing in its Citus mode. Every seller's chain
// verifies, every acknowledged invoice is stored as answered, and each
// series is exactly 1..N across the move.
func TestCitusMovesASingleNodeDatabase(t *testing.T) {
	dbtest.RequireCitus(t)
	t.Parallel()
	ctx := t.Context()
	workers := dbtest.CitusWorkers(t)
	// The workers' databases are dropped after the coordinator's
	// (cleanups run last first).
	var name string
	t.Cleanup(func() {
		if name == "" {
			return
		}
		for _, w := range workers {
			conn, err := pgx.Connect(context.Background(), w.URL)
			if err == nil {
				_, err = conn.Exec(context.Background(), fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, pgx.Identifier{name}.Sanitize()))
				conn.Close(context.Background())
			}
			if err != nil {
				t.Logf("drop %s on worker %d: %v", name, w.Port, err)
			}
		}
	})
	dbURL := dbtest.NewEmptyURL(t) // on the coordinator only, without citus: a single node
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name = strings.TrimPrefix(u.Path, "/")

	// Before: plain PostgreSQL, filled by the server.
	cli(t, dbURL, "migrate")
	if n := queryInt(t, dbURL, `SELECT count(*) FROM pg_extension WHERE extname = 'citus'`); n != 0 {
		t.Fatal("the single-node database has the citus extension")
	}
	const sellers = 6
	codes, keys := make([]string, sellers), make([]string, sellers)
	gstins := make([]string, sellers)
	for i := range sellers {
		codes[i] = fmt.Sprintf("M%02d", i+1)
		gstins[i], keys[i] = addSeller(t, dbURL, fmt.Sprintf("29AAPFM%04dK1Z", i+1), codes[i], "issue,read")
	}
	h := &History{}
	issueAll := func(base, phase string, each int) {
		t.Helper()
		var wg sync.WaitGroup
		for i := range sellers {
			c := newClient(h, keys[i], base, "mv")
			defer c.close()
			wg.Go(func() {
				for n := range each {
					if !c.issue(ctx, i, codes[i], fmt.Sprintf("mv-%s-%s-%04d", phase, codes[i], n), time.Now().Add(retryWindow)) {
						t.Errorf("%s: %s invoice %d was not issued", phase, codes[i], n)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	srv := startServer(t, dbURL, "127.0.0.1:0", "--log-requests=false")
	issueAll("http://"+srv.Addr, "before", 40)
	// One more seller's series is leased to an offline device when the
	// tables move: the lease guard must neither refuse the copy of its
	// counter row nor stay off after it.
	leasedGSTIN, leasedKey := addSeller(t, dbURL, "29AAPFM0099K1Z", "LSD", "issue,read,manage")
	post := func(base, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+leasedKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	lc := newClient(h, leasedKey, "http://"+srv.Addr, "mv") // recorded, for the checker
	defer lc.close()
	if !lc.issue(ctx, sellers, "LSD", "mv-leased-0", time.Now().Add(retryWindow)) {
		t.Fatal("the leased seller's first invoice was not issued")
	}
	if st, b := post("http://"+srv.Addr, "/v1/series/LSD/lease", `{"device_id":"till-7"}`); st != http.StatusCreated {
		t.Fatalf("taking the lease: %d %s", st, b)
	}
	srv.Kill() // the servers stop while the tables move (docs/scale-out.md)
	before := queryInt(t, dbURL, `SELECT count(*) FROM invoices`)

	// The move: the extension and the workers in this database (Citus
	// keeps its metadata per database), then invoiced migrate.
	for _, w := range workers {
		execAdmin(t, ctx, w.URL, fmt.Sprintf(`CREATE DATABASE %s`, pgx.Identifier{name}.Sanitize()))
		execAdmin(t, ctx, withDB(t, w.URL, name), `CREATE EXTENSION citus`)
	}
	coordinator, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{`CREATE EXTENSION citus`,
		fmt.Sprintf(`SELECT citus_set_coordinator_host('%s', %s)`, coordinator.Hostname(), coordinator.Port())}
	for _, w := range workers {
		stmts = append(stmts, fmt.Sprintf(`SELECT citus_add_node('127.0.0.1', %d)`, w.Port))
	}
	for _, s := range stmts {
		execAdmin(t, ctx, dbURL, s)
	}
	// Half-way (the extension, no distributed table yet) no server starts:
	// in neither mode would its statements fit the tables.
	serve := exec.CommandContext(ctx, bin.Path, "serve", "--addr", "127.0.0.1:0")
	serve.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	if out, err := serve.CombinedOutput(); err == nil || !strings.Contains(string(out), "run `invoiced migrate` to distribute them") {
		t.Fatalf("invoiced serve before the tables are distributed: %v\n%s\nwant a refusal that says to run invoiced migrate", err, out)
	}
	began := time.Now()
	cli(t, dbURL, "migrate")
	took := time.Since(began)
	// migrations/citus.go's distributedTables: 14 since serial_declarations
	// (00052) and e_invoices (00045).
	if n := queryInt(t, dbURL, `SELECT count(*) FROM pg_dist_partition WHERE partmethod = 'h'`); n != 14 {
		t.Fatalf("%d distributed tables after invoiced migrate, want 14 (migrations/citus.go)", n)
	}
	if after := queryInt(t, dbURL, `SELECT count(*) FROM invoices`); after != before {
		t.Fatalf("%d invoices after the move, %d before", after, before)
	}
	// The coordinator's local copies, invisible since the copy, are
	// removed (the step docs/scale-out.md gives the operator).
	execAdmin(t, ctx, dbURL, `SELECT truncate_local_data_after_distributing_table(logicalrelid) FROM pg_dist_partition`)
	if after := queryInt(t, dbURL, `SELECT count(*) FROM invoices`); after != before {
		t.Fatalf("%d invoices after truncating the local copies, %d before", after, before)
	}
	onWorkers := 0
	var workerDBs []string // with the shards visible, which Citus hides from pg_class otherwise
	for _, w := range workers {
		shardsVisible := withDB(t, w.URL, name) + "&citus.override_table_visibility=off"
		workerDBs = append(workerDBs, shardsVisible)
		onWorkers += queryInt(t, shardsVisible, `SELECT coalesce(sum(n), 0)::int FROM (SELECT (xpath('/row/c/text()',
			query_to_xml(format('SELECT count(*) AS c FROM %I', relname), false, true, '')))[1]::text::int AS n
			FROM pg_class WHERE relname LIKE 'invoices\_%' AND relkind = 'r') x`)
	}
	if onWorkers != before {
		t.Fatalf("the workers' shards of invoices hold %d rows, want %d", onWorkers, before)
	}

	// After: the same binary, restarted, issues in its Citus mode.
	srv = startServer(t, dbURL, "127.0.0.1:0", "--log-requests=false")
	defer logInternalErrors(t, srv)
	waitLog(t, srv, "citus_workers=2")
	issueAll("http://"+srv.Addr, "after", 40)
	if st, b := post("http://"+srv.Addr, "/v1/series/LSD/invoices", body("mv-leased-1")); st != http.StatusConflict || !strings.Contains(b, "series_leased") {
		t.Fatalf("an invoice of the leased series after the move: %d %s, want 409 series_leased (the guard is on again)", st, b)
	}
	for _, w := range append([]string{dbURL}, workerDBs...) {
		if n := queryInt(t, w, `SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'series\_counters\_lease\_guard%' AND tgenabled = 'D'`); n != 0 {
			t.Fatalf("%d lease guards left disabled on %s", n, hostPort(t, w))
		}
	}
	for _, g := range append(gstins, leasedGSTIN) {
		cli(t, dbURL, "verify", "--gstin", g)
	}
	r := verdict(t, "citus-move", h, dbURL, CheckOptions{RequireAllAcked: true})
	t.Logf("FAULTS citus-move sellers=%d invoices-before=%d distributed-in=%v acked=%d", sellers, before, took.Round(time.Millisecond), r.Acked)
}

// execAdmin runs stmt on the database of rawURL, failing the test if it
// fails.
func execAdmin(t *testing.T, ctx context.Context, rawURL, stmt string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, stmt); err != nil {
		t.Fatalf("%s on %s: %v", stmt, hostPort(t, rawURL), err)
	}
}

// queryInt returns the integer that query answers on rawURL.
func queryInt(t *testing.T, rawURL, query string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int
	if err := conn.QueryRow(ctx, query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// withDB returns rawURL naming database name instead.
func withDB(t *testing.T, rawURL, name string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// waitLog waits up to 2 s for srv's stderr to contain s (it is copied by
// another goroutine than the stdout line that said it listens), failing
// the test with the log otherwise.
func waitLog(t *testing.T, srv *server, s string) {
	t.Helper()
	testwait.Until(t, 2*time.Second, func() bool { return strings.Contains(srv.Stderr(), s) },
		"the server's log to contain %q; it holds:\n%s", s, stderrOf{srv})
}

// stderrOf prints a server's stderr when formatted, not when made.
type stderrOf struct{ srv *server }

func (l stderrOf) String() string { return l.srv.Stderr() }
