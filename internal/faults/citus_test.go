//go:build citus

// The fault test of a Citus deployment: make test-citus builds it with
// -tags citus and runs it on scripts/citus' throw-away cluster (a
// coordinator and two workers), whose workers' ports and folders
// TEST_CITUS_WORKERS names.
package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/jackc/pgx/v5"
)

// citusSeller is one seller of the test: its series (one code per seller,
// so the checker can tell them apart), its key, and the port of the
// worker that holds its shard group.
type citusSeller struct {
	gstin, code, key string
	port             int
}

// seedCitusSellers creates n sellers through the command line, each with
// a series and a key, and looks up which worker holds each one's shard
// group.
func seedCitusSellers(t *testing.T, dbURL string, n int) []citusSeller {
	t.Helper()
	cli(t, dbURL, "migrate")
	out := make([]citusSeller, n)
	for i := range out {
		s := &out[i]
		s.code = fmt.Sprintf("W%02d", i+1)
		s.gstin, s.key = addSeller(t, dbURL, fmt.Sprintf("27AAPFW%04dK1Z", i+1), s.code, "issue,read")
	}
	for i, port := range sellerPorts(t, dbURL, out) {
		out[i].port = port
	}
	return out
}

// sellerPorts returns the port of the worker that holds each seller's
// shard group now, in the order of sellers.
func sellerPorts(t *testing.T, dbURL string, sellers []citusSeller) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	out := make([]int, len(sellers))
	for i, s := range sellers {
		if err := conn.QueryRow(ctx, `SELECT p.nodeport FROM sellers s, pg_dist_shard_placement p
			WHERE s.gstin = $1 AND p.shardid = get_shard_id_for_distribution_column('series', s.id)`, s.gstin).Scan(&out[i]); err != nil {
			t.Fatalf("the worker of seller %s: %v", s.gstin, err)
		}
	}
	return out
}

// addSeller creates, through the command line, the seller whose GSTIN
// starts with first14 (its check character added), its series code
// (numbered code/{FY}/{SEQ:6}) and a key with scopes, and returns the GSTIN
// and the key.
func addSeller(t *testing.T, dbURL, first14, code, scopes string) (gstin, key string) {
	t.Helper()
	gstin = testfactory.GSTIN(t, first14)
	cli(t, dbURL, "sellers", "add", "--gstin", gstin, "--name", "Seller "+code)
	cli(t, dbURL, "series", "add", "--gstin", gstin, "--code", code, "--format", code+"/{FY}/{SEQ:6}")
	return gstin, strings.TrimSpace(cli(t, dbURL, "keys", "add", "--gstin", gstin, "--scopes", scopes))
}

// durableCommits sets synchronous_commit = on for the test's database on
// every node, workers first, as a production cluster runs, whatever the
// throw-away cluster's configuration says (scripts/citus sets it on; with
// it off a worker acknowledges a COMMIT before its WAL has left shared
// memory, which kill -9 throws away: this test then finds lost
// acknowledgements). fsync may stay off:
// a process crash leaves the kernel's page cache, and the WAL in it,
// intact.
func durableCommits(t *testing.T, dbURL string, workers []dbtest.CitusNode) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	nodes := []string{}
	for _, w := range workers {
		nodes = append(nodes, w.URL)
	}
	for _, n := range append(nodes, dbtest.AdminURL(t)) {
		conn, err := pgx.Connect(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s SET synchronous_commit = on`, pgx.Identifier{name}.Sanitize()))
		conn.Close(ctx)
		if err != nil {
			t.Fatalf("synchronous_commit on %s: %v", hostPort(t, n), err)
		}
	}
}

// TestCitusWorkerKill9 kills one Citus worker with SIGKILL (its postmaster
// and every backend, as when its machine dies) while sellers whose shard
// groups lie on both workers issue, each through its own key and series,
// with clients that retry with their Idempotency-Key. While the worker is
// down the sellers on the other worker keep getting 201s, and the dead
// worker's sellers get 503 with a JSON error body (never a 500); after the
// worker restarts they issue again unaided. At the end every key was
// acknowledged, every acknowledged invoice is stored as answered, and each
// series is exactly 1..N (the invariants of docs/faults.md, checked by
// Check against the invoices on both workers).
func TestCitusWorkerKill9(t *testing.T) {
	dbtest.RequireCitus(t)
	// Not t.Parallel(): the test kills a worker of the cluster every test
	// of the package shares. Go runs it before any parallel test of the
	// package starts, and make test-citus runs this package after the
	// other suites, alone.
	ctx := t.Context()
	nodes := dbtest.CitusWorkers(t)
	victim := nodes[len(nodes)-1]
	dbURL := dbtest.NewURL(t)
	durableCommits(t, dbURL, nodes)
	sellers := seedCitusSellers(t, dbURL, 12)
	onVictim := map[string]bool{} // series code → its seller lies on the victim
	for _, s := range sellers {
		onVictim[s.code] = s.port == victim.Port
	}
	var nVictim int
	for _, v := range onVictim {
		if v {
			nVictim++
		}
	}
	if nVictim < 2 || nVictim > len(sellers)-2 {
		t.Fatalf("%d of %d sellers lie on worker %d: want at least two on each worker", nVictim, len(sellers), victim.Port)
	}

	// Without request logs, the tail of its log that the server keeps holds
	// its warnings, which say why it answered 503.
	srv := startServer(t, dbURL, "127.0.0.1:0", "--log-requests=false")
	// The automatic --batches-in-flight on Citus: two group-commit
	// transactions per worker (serve.go, autoBatchesInFlight).
	waitLog(t, srv, "citus_workers=2 batches_in_flight=4")
	defer logInternalErrors(t, srv)
	base := "http://" + srv.Addr
	h := &History{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const perSeller = 2
	issueUntil(ctx, t, h, base, "cw", sellers, perSeller, stop, &wg)
	endLoad := loadEnder(t, stop, &wg)
	defer endLoad()

	// seen counts, per series code, the attempts answered with status
	// (OK for 201) after since.
	seen := func(status int, since time.Time) map[string]int {
		out := map[string]int{}
		for _, op := range h.Ops() {
			if op.Type != Invoke && op.Type != Fault && op.Status == status && op.Time.After(since) {
				out[strings.ToUpper(op.Series)]++
			}
		}
		return out
	}
	// summary lists, per series, its seller's worker and the statuses of
	// its attempts after since, for a failure message.
	summary := func(since time.Time) string {
		var sb strings.Builder
		first := map[string]string{}
		for _, s := range sellers {
			st := map[int]int{}
			for _, op := range h.Ops() {
				if strings.EqualFold(op.Series, s.code) && op.Type != Invoke && op.Time.After(since) {
					st[op.Status]++
					if op.Status != http.StatusCreated && first[s.code] == "" {
						first[s.code] = fmt.Sprintf("%d %s", op.Status, clip(op.Err))
					}
				}
			}
			fmt.Fprintf(&sb, "\n  %s on worker %d: statuses %v; first other answer: %s", s.code, s.port, st, first[s.code])
		}
		return sb.String()
	}
	waitFor := func(timeout time.Duration, since time.Time, cond func() bool, what string) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out after %s waiting for %s; since %s:%s\nthe server's log ends:\n%s", timeout, what, since.Format("15:04:05.000"), summary(since), srv.Stderr())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	every := func(counts map[string]int, victims bool, least int) bool {
		for _, s := range sellers {
			if onVictim[s.code] == victims && counts[s.code] < least {
				return false
			}
		}
		return true
	}

	started := time.Now()
	waitFor(60*time.Second, started, func() bool {
		c := seen(http.StatusCreated, time.Time{})
		return every(c, true, 3) && every(c, false, 3)
	}, "every seller to issue three invoices")

	h.Mark(fmt.Sprintf("kill -9 worker %d", victim.Port))
	killed := time.Now()
	node := &cluster{t: t, dir: victim.Dir, port: victim.Port, bindir: pgBindir(t)}
	node.kill9()
	up := false
	defer func() {
		if !up { // the test failed during the outage: the package's other tests need the worker
			node.start()
		}
	}()

	// While it is down: the other worker's sellers issue, the dead one's
	// are answered 503.
	waitFor(30*time.Second, killed, func() bool {
		return every(seen(http.StatusCreated, killed), false, 5) && every(seen(http.StatusServiceUnavailable, killed), true, 1)
	}, "the sellers on the live worker to issue five invoices each and those on the killed one to be answered 503")
	time.Sleep(time.Until(killed.Add(3 * time.Second))) // an outage of a few seconds at least
	during := seen(http.StatusCreated, killed.Add(time.Second))
	refused := seen(http.StatusServiceUnavailable, killed)

	node.start()
	up = true
	h.Mark(fmt.Sprintf("worker %d restarted", victim.Port))
	restarted := time.Now()
	waitFor(60*time.Second, restarted, func() bool {
		return every(seen(http.StatusCreated, restarted), true, 3)
	}, "the sellers of the restarted worker to issue three invoices each")
	recovered := time.Since(restarted)
	endLoad()

	var live, dead, lateDead int
	for _, s := range sellers {
		if onVictim[s.code] {
			dead += refused[s.code]
			lateDead += during[s.code]
		} else {
			live += during[s.code]
		}
	}
	// Every 5xx is a 503 with the JSON error body.
	for _, op := range h.Ops() {
		if op.Type != Unknown || op.Status == 0 {
			continue
		}
		var body struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if op.Status != http.StatusServiceUnavailable || json.Unmarshal([]byte(op.Err), &body) != nil || body.Error.Code == "" || body.Error.Message == "" {
			t.Errorf("attempt %d for %s: status %d, body %s: want 503 with {\"error\":{\"code\",\"message\"}}", op.Seq, op.Key, op.Status, clip(op.Err))
		}
	}
	r := verdict(t, "citus-worker-kill9", h, dbURL, CheckOptions{RequireAllAcked: true})
	t.Logf("FAULTS citus-worker-kill9 sellers=%d on-killed-worker=%d live-201s-during-outage=%d dead-503s=%d dead-201s-after-1s=%d recovered-in=%v unknown=%d",
		len(sellers), nVictim, live, dead, lateDead, recovered.Round(time.Millisecond), r.Unknown)
}
