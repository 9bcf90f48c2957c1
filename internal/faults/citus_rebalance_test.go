//go:build citus

package faults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/jackc/pgx/v5"
)

// TestCitusRebalanceOntoANewWorker grows the cluster as docs/scale-out.md
// ("Adding workers later") says, while sellers on both workers issue
// through `invoiced serve` with clients that retry with their
// Idempotency-Key, and another client cancels acknowledged invoices: a
// third worker (its own PostgreSQL, citus preloaded, wal_level = logical)
// joins with citus_add_node, and citus_rebalance_start moves shard groups
// onto it by logical replication. Nothing acknowledged is lost, each series
// is exactly 1..N, every acknowledged cancellation is stored, every
// seller's chain verifies, shard groups did move to the new worker and its
// sellers issue there afterwards. Issuing's p99 during the move is logged.
//
// The node joins only the test's own database: Citus keeps its metadata
// (pg_dist_node) per database, so the shared cluster's other databases,
// and the maintenance database dbtest finds the workers in, never see it;
// the test checks that, and the node is stopped and removed at the end.
func TestCitusRebalanceOntoANewWorker(t *testing.T) {
	dbtest.RequireCitus(t)
	t.Parallel()
	ctx := t.Context()
	dbURL := dbtest.NewURL(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	workers := dbtest.CitusWorkers(t)
	sellers := seedCitusSellers(t, dbURL, 12)

	// The new worker, as scripts/citus configures a node. Its cleanup
	// (stop, remove) runs before dbtest's, which drops the database on
	// the coordinator and the original workers.
	node := newCluster(t, "shared_preload_libraries = 'citus'", "wal_level = logical", "max_worker_processes = 32",
		"max_prepared_transactions = 100", "citus.propagate_set_commands = 'local'")
	diagnosed := false // rebalanceDiagnostics logs the end of the new worker's log itself
	t.Cleanup(func() {
		if t.Failed() && !diagnosed {
			t.Logf("the new worker's log ends:\n%s", logTail(node, 40))
		}
	})
	execAdmin(t, ctx, node.url("postgres"), fmt.Sprintf(`CREATE DATABASE %s`, pgx.Identifier{name}.Sanitize()))
	execAdmin(t, ctx, node.url(name), `CREATE EXTENSION citus`)
	// The test's database is a clone of dbtest's template, whose Citus
	// metadata records the template as a distributed database; the sync of
	// citus_add_node registers it on the new node, where it must exist
	// ("database … does not exist" otherwise). A database made with
	// CREATE DATABASE on its own would not need this.
	for _, db := range queryStrings(t, dbURL, `SELECT (pg_identify_object_as_address(classid, objid, objsubid)).object_names[1]
		FROM pg_dist_object WHERE classid = 'pg_database'::regclass`) {
		if db != name {
			execAdmin(t, ctx, node.url("postgres"), fmt.Sprintf(`CREATE DATABASE %s`, pgx.Identifier{db}.Sanitize()))
		}
	}

	// Every node commits the test's database synchronously, as a
	// production cluster does and docs/scale-out.md requires, whatever
	// the throw-away cluster's configuration: with synchronous_commit =
	// off a move's switch-over can leave a just-acknowledged transaction
	// behind on the old placement (TestCitusMoveKeepsACommitJustBeforeItsSwitch).
	durableCommits(t, dbURL, append(slices.Clone(workers), dbtest.CitusNode{Port: node.port, URL: node.url("postgres")}))
	srv := startServer(t, dbURL, "127.0.0.1:0", "--log-requests=false")
	defer logInternalErrors(t, srv)
	base := "http://" + srv.Addr
	h := &History{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	issueUntil(ctx, t, h, base, "rb", sellers, 2, stop, &wg)
	keyOf := map[string]string{} // series code → the seller's API key
	for _, s := range sellers {
		keyOf[s.code] = s.key
	}
	// The canceller's own; read once the load has ended (endLoad waits).
	cancelled := map[string]bool{} // issue key → its cancellation was acknowledged
	wg.Go(func() {
		next := 0 // the history before it is considered
		for ctx.Err() == nil {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			for _, op := range h.From(next) {
				next++
				if op.Type != OK || op.ID == "" {
					continue
				}
				if cancelInvoice(ctx, base, keyOf[strings.ToUpper(op.Series)], op.ID, "cancel-"+op.Key, time.Now().Add(retryWindow)) {
					cancelled[op.Key] = true
				}
				break // one a round, so issuing dominates
			}
		}
	})
	endLoad := loadEnder(t, stop, &wg)
	defer endLoad()
	// issuedSince returns a condition that holds once each of codes has
	// three invoices issued after since; it reads only the history it has
	// not read yet.
	issuedSince := func(since time.Time, codes []string) func() bool {
		n, next := map[string]int{}, 0
		return func() bool {
			for _, op := range h.From(next) {
				next++
				if op.Type == OK && op.Time.After(since) {
					n[strings.ToUpper(op.Series)]++
				}
			}
			for _, c := range codes {
				if n[c] < 3 {
					return false
				}
			}
			return true
		}
	}
	allCodes := make([]string, len(sellers))
	for i, s := range sellers {
		allCodes[i] = s.code
	}
	started := time.Now()
	testwait.Until(t, 60*time.Second, issuedSince(started, allCodes), "every seller to issue three invoices; the server's log ends:\n%s", stderrOf{srv})
	time.Sleep(time.Second) // a second of issuing before the move, to compare with

	placements := func() map[int]int { // node port → shard placements of the distributed tables
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.WithoutCancel(ctx))
		rows, err := conn.Query(ctx, `SELECT p.nodeport, count(*) FROM pg_dist_shard_placement p
			JOIN pg_dist_shard s USING (shardid) JOIN pg_dist_partition d USING (logicalrelid)
			WHERE d.partmethod = 'h' GROUP BY p.nodeport`)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int]int{}
		for rows.Next() {
			var port, n int
			if err := rows.Scan(&port, &n); err != nil {
				t.Fatal(err)
			}
			out[port] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := placements()

	h.Mark("citus_add_node and citus_rebalance_start")
	moveStart := time.Now()
	execAdmin(t, ctx, dbURL, fmt.Sprintf(`SELECT citus_add_node('127.0.0.1', %d)`, node.port))
	execAdmin(t, ctx, dbURL, `SELECT citus_rebalance_start()`)
	watched := watchRebalance(ctx, dbURL, h)
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	execAdmin(t, waitCtx, dbURL, `SELECT citus_rebalance_wait()`)
	moveEnd := time.Now()
	watched()
	h.Mark("citus_rebalance_wait returned")
	after := placements()
	if after[node.port] == 0 {
		t.Fatalf("no shard placement moved to the new worker %d: before %v, after %v", node.port, before, after)
	}
	if sum := func(m map[int]int) (n int) {
		for _, v := range m {
			n += v
		}
		return n
	}; sum(after) != sum(before) {
		t.Fatalf("%d placements after the move, %d before (%v, %v)", sum(after), sum(before), after, before)
	}
	if st := queryStrings(t, dbURL, `SELECT state::text FROM citus_rebalance_status()`); len(st) != 1 || st[0] != "finished" {
		t.Fatalf("the rebalance job ended %v, want finished", st)
	}

	// The sellers now on the new worker issue there.
	var moved []string
	for i, port := range sellerPorts(t, dbURL, sellers) {
		if port == node.port {
			moved = append(moved, sellers[i].code)
		}
	}
	if len(moved) == 0 {
		t.Fatalf("none of the %d sellers' shard groups moved to the new worker (placements %v)", len(sellers), after)
	}
	testwait.Until(t, 60*time.Second, issuedSince(moveEnd, moved), "the moved sellers to issue three invoices each; the server's log ends:\n%s", stderrOf{srv})
	// The old placements are dropped while issuing goes on, and issuing
	// goes on after.
	orphans := queryInt(t, dbURL, `SELECT count(*) FROM pg_dist_cleanup`)
	h.Mark("citus_cleanup_orphaned_resources")
	execAdmin(t, ctx, dbURL, `CALL citus_cleanup_orphaned_resources()`)
	dropped := time.Now()
	testwait.Until(t, 60*time.Second, issuedSince(dropped, allCodes), "every seller to issue three invoices after the old placements were dropped; the server's log ends:\n%s", stderrOf{srv})
	endLoad()

	r := verdict(t, "citus-rebalance", h, dbURL, CheckOptions{RequireAllAcked: true})
	if t.Failed() {
		diagnosed = true
		rebalanceDiagnostics(t, dbURL, node, name, workers, h, moveStart, r)
	}
	for _, s := range sellers {
		cli(t, dbURL, "verify", "--gstin", s.gstin)
	}
	stored := map[string]bool{}
	for _, k := range queryStrings(t, dbURL, `SELECT items->0->>'description' FROM invoices WHERE status = 'cancelled'`) {
		stored[k] = true
	}
	for k := range cancelled {
		if !stored[k] {
			t.Errorf("the cancellation of %s was acknowledged but the invoice is not stored cancelled", k)
		}
	}
	if len(cancelled) == 0 {
		t.Error("no cancellation was acknowledged")
	}

	// Logical replication cleaned up after itself on the old workers (a
	// slot left behind would also keep the test's database from being
	// dropped), and the shared cluster does not know the new node.
	for _, w := range workers {
		if n := queryInt(t, w.URL, fmt.Sprintf(`SELECT count(*) FROM pg_replication_slots WHERE database = '%s'`, name)); n != 0 {
			t.Errorf("%d replication slots left in %s on worker %d", n, name, w.Port)
		}
	}
	if n := queryInt(t, dbtest.AdminURL(t), fmt.Sprintf(`SELECT count(*) FROM pg_dist_node WHERE nodeport = %d`, node.port)); n != 0 {
		t.Errorf("the shared cluster's maintenance database lists the new worker")
	}
	if n := queryInt(t, dbtest.NewURL(t), fmt.Sprintf(`SELECT count(*) FROM pg_dist_node WHERE nodeport = %d`, node.port)); n != 0 {
		t.Errorf("another test database lists the new worker")
	}

	p99 := func(from, to time.Time) (time.Duration, int) {
		return issueP99(h.Ops(), from, to)
	}
	during, nDuring := p99(moveStart, moveEnd)
	beforeP99, nBefore := p99(moveStart.Add(-time.Second), moveStart)
	t.Logf("FAULTS citus-rebalance sellers=%d moved-sellers=%d placements-before=%v after=%v move-took=%v issued-during=%d issue-p99-during=%v issue-p99-1s-before=%v (%d) cancels=%d acked=%d unknown=%d orphans-dropped-after=%d",
		len(sellers), len(moved), before, after, moveEnd.Sub(moveStart).Round(time.Millisecond), nDuring, during.Round(time.Millisecond),
		beforeP99.Round(time.Millisecond), nBefore, len(cancelled), r.Acked, r.Unknown, orphans)
}

// issueP99 returns the 99th percentile, by nearest rank, of the time from
// a key's first attempt to its 201 (retries included), over the keys
// acknowledged between from and to, and how many there were.
func issueP99(ops []Op, from, to time.Time) (time.Duration, int) {
	first := map[string]time.Time{}
	var lat []time.Duration
	for _, op := range ops {
		switch {
		case op.Type == Invoke:
			if _, ok := first[op.Key]; !ok {
				first[op.Key] = op.Time
			}
		case op.Type == OK && !op.Time.Before(from) && op.Time.Before(to):
			lat = append(lat, op.Time.Sub(first[op.Key]))
		}
	}
	if len(lat) == 0 {
		return 0, 0
	}
	slices.Sort(lat)
	return lat[(len(lat)*99+99)/100-1], len(lat)
}

// cancelInvoice cancels invoice id with apiKey and Idempotency-Key key,
// retrying on transport errors, 5xx and 409 until deadline. It reports
// whether the cancellation was acknowledged (200).
func cancelInvoice(ctx context.Context, base, apiKey, id, key string, deadline time.Time) bool {
	c := &http.Client{Timeout: 20 * time.Second}
	for time.Now().Before(deadline) && ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/invoices/"+id+"/cancel", strings.NewReader(`{"reason":"returned"}`))
		if err != nil {
			return false
		}
		req.Header.Set("Authorization", "Bearer "+apiKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		res, err := c.Do(req)
		if err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			switch {
			case res.StatusCode == http.StatusOK:
				return true
			case res.StatusCode < 500 && res.StatusCode != http.StatusConflict:
				return false
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// queryStrings returns the first column of query's rows on rawURL.
func queryStrings(t *testing.T, rawURL, query string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

// watchRebalance records in h, every 100 ms until the returned function is
// called, each change of what get_rebalance_progress reports of the
// rebalance's moves (shard group, source and target port, phase), so that a
// failed run's timeline shows in which phase of which move a lost
// acknowledgement was given. The returned function waits for the watcher to
// end.
func watchRebalance(ctx context.Context, dbURL string, h *History) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			h.Mark("rebalance watcher: " + err.Error())
			return
		}
		defer conn.Close(context.WithoutCancel(ctx))
		last := ""
		for ctx.Err() == nil {
			var now string
			err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(DISTINCT format('group of shard %s %s>%s %s', shardid, sourceport, targetport, status), '; '), 'no move')
				FROM get_rebalance_progress() WHERE table_name = 'series'::regclass`).Scan(&now)
			if err != nil {
				now = "progress read failed: " + err.Error()
			}
			if now != last {
				h.Mark("rebalance: " + now)
				last = now
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// rebalanceDiagnostics logs, for a failed run, what tells where a lost
// acknowledgement went, the most telling last (CI shows a failure's last
// lines): the end of the new worker's log; on every node, each shard table
// of invoices and idempotency keys (old placements included, until they are
// dropped) that holds a key the checker found missing; the prepared
// transactions left on each node (test clusters run no two-phase-commit
// recovery); the cleanup records Citus still holds; the rebalance's
// timeline (its moves' phases and the test's marks, in seconds from
// citus_rebalance_start); and each lost key's attempts beside the later
// invoices that took its serial.
func rebalanceDiagnostics(t *testing.T, dbURL string, node *cluster, name string, workers []dbtest.CitusNode, h *History, start time.Time, r Report) {
	t.Helper()
	t.Logf("diagnosis: the new worker's log ends:\n%s", logTail(node, 40))
	urls := []string{dbURL, node.url(name)}
	for _, w := range workers {
		urls = append(urls, withDB(t, w.URL, name))
	}
	for _, nu := range urls {
		host := hostPort(t, nu)
		for _, rel := range queryStrings(t, nu, `SELECT relname::text FROM pg_class WHERE relkind = 'r'
			AND (relname::text LIKE 'idempotency_keys%' OR relname::text LIKE 'invoices%')`) {
			col := "key"
			if strings.HasPrefix(rel, "invoices") {
				col = "items->0->>'description'"
			}
			for _, k := range r.Lost {
				if n := queryInt(t, nu, fmt.Sprintf(`SELECT count(*) FROM %s WHERE %s = '%s'`, pgx.Identifier{rel}.Sanitize(), col, strings.ReplaceAll(k, "'", "''"))); n > 0 {
					t.Logf("diagnosis: %s holds the lost key %s in %s", host, k, rel)
				}
			}
		}
		t.Logf("diagnosis: prepared transactions on %s: %v", host, queryStrings(t, nu, `SELECT gid || ' ' || prepared::text FROM pg_prepared_xacts`))
	}
	t.Logf("diagnosis: cleanup records: %v", queryStrings(t, dbURL, `SELECT object_name || ' group ' || node_group_id || ' policy ' || policy_type FROM pg_dist_cleanup`))
	at := func(tm time.Time) string { return fmt.Sprintf("%+.3fs", tm.Sub(start).Seconds()) }
	ops := h.Ops()
	var timeline []string
	for _, op := range ops {
		if op.Type == Fault {
			timeline = append(timeline, at(op.Time)+" "+op.Err)
		}
	}
	t.Logf("diagnosis: timeline:\n  %s", strings.Join(timeline, "\n  "))
	lost := map[string]bool{}
	for _, k := range r.Lost {
		lost[k] = true
	}
	type serialOf struct {
		series string
		serial int64
	}
	lostSerials := map[serialOf]bool{}
	for _, op := range ops {
		if lost[op.Key] && op.Type == OK {
			lostSerials[serialOf{strings.ToUpper(op.Series), op.Serial}] = true
		}
	}
	var lines []string
	for _, op := range ops {
		if lost[op.Key] || (op.Type == OK && lostSerials[serialOf{strings.ToUpper(op.Series), op.Serial}]) {
			lines = append(lines, fmt.Sprintf("%s %s %s %s status=%d serial=%d replayed=%v %s", at(op.Time), op.Key, op.Type, op.Number, op.Status, op.Serial, op.Replayed, op.Err))
		}
	}
	t.Logf("diagnosis: lost keys %v, their attempts and the later invoices with their serials:\n  %s", r.Lost, strings.Join(lines, "\n  "))
}

// logTail returns the last n lines of c's server log, or why it could not
// be read.
func logTail(c *cluster, n int) string {
	b, err := os.ReadFile(filepath.Join(c.dir, "server.log"))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
