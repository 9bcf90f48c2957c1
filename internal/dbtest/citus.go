package dbtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// On a Citus coordinator (scripts/citus test) a test database must exist
// on every node: the coordinator's copy holds the metadata (which shard of
// which table lives on which worker) and each worker's copy holds its
// shards, all in databases of one name. Citus propagates CREATE DATABASE
// only from template1, so the migrated template is made on every node
// here and each test's database is cloned from it on every node, workers
// first: a coordinator copy then never points at a shard that is not there
// yet. The copies agree because the clones are of one consistent state:
// nothing runs in a template (connections to it are refused once it is
// made, which also ends Citus' maintenance daemon there, a session that
// would stop CREATE DATABASE … TEMPLATE).

var (
	workersOnce sync.Once
	workerURLs  []string
	workersErr  error
)

// workers returns the maintenance URLs of the Citus workers the server
// behind admin coordinates (from pg_dist_node of its maintenance
// database, which scripts/citus fills), or none on plain PostgreSQL.
func workers(admin string) ([]string, error) {
	workersOnce.Do(func() { workerURLs, workersErr = findWorkers(admin) })
	return workerURLs, workersErr
}

func findWorkers(admin string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", redact(admin), err)
	}
	defer conn.Close(ctx)
	var citus bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')`).Scan(&citus); err != nil || !citus {
		return nil, err
	}
	rows, err := conn.Query(ctx, `SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary' ORDER BY nodeid`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var host string
		var port int
		if err := rows.Scan(&host, &port); err != nil {
			return nil, err
		}
		u, err := url.Parse(admin)
		if err != nil {
			return nil, err
		}
		u.Host = net.JoinHostPort(host, strconv.Itoa(port))
		out = append(out, u.String())
	}
	return out, rows.Err()
}

// Citus reports whether the test server is a Citus coordinator with
// workers (make test-citus). It fails the test as AdminURL does.
func Citus(t testing.TB) bool {
	t.Helper()
	ws, err := workers(AdminURL(t))
	if err != nil {
		t.Fatalf("dbtest: citus workers: %v", err)
	}
	return len(ws) > 0
}

// RequireCitus fails the test unless the test server is a Citus
// coordinator with workers: for the tests built with -tags citus, which
// make test-citus runs and which mean nothing elsewhere.
func RequireCitus(t testing.TB) {
	t.Helper()
	if !Citus(t) {
		t.Fatal("TEST_DATABASE_URL is not a Citus coordinator with workers: run make test-citus")
	}
}

// coordinatorAddress returns the host and port of the server behind admin.
func coordinatorAddress(admin string) (string, int, error) {
	u, err := url.Parse(admin)
	if err != nil {
		return "", 0, err
	}
	port := 5432
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return "", 0, err
		}
	}
	return u.Hostname(), port, nil
}

// execOn runs each statement on the server behind raw, in its own
// connection to its maintenance database, and returns the first failure.
func execOn(ctx context.Context, raw string, stmts ...string) error {
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		return fmt.Errorf("connect %s: %w", redact(raw), err)
	}
	defer conn.Close(ctx)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s on %s: %w", s, redact(raw), err)
		}
	}
	return nil
}

// prepareCitusTemplate makes the empty database name on every worker and
// joins it to the coordinator's (admin's) copy, which exists already:
// the citus extension in each, the workers added to the coordinator's
// metadata. Migrating the coordinator's copy then distributes the tables.
func prepareCitusTemplate(ctx context.Context, admin string, workers []string, name string) error {
	for _, w := range workers {
		if err := execOn(ctx, w, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name), fmt.Sprintf(`CREATE DATABASE %s`, name)); err != nil {
			return err
		}
		if err := execOn(ctx, withDatabase(w, name), `CREATE EXTENSION citus`); err != nil {
			return err
		}
	}
	host, port, err := coordinatorAddress(admin)
	if err != nil {
		return err
	}
	stmts := []string{`CREATE EXTENSION citus`, fmt.Sprintf(`SELECT citus_set_coordinator_host(%s, %d)`, quote(host), port)}
	for _, w := range workers {
		h, p, err := coordinatorAddress(w)
		if err != nil {
			return err
		}
		stmts = append(stmts, fmt.Sprintf(`SELECT citus_add_node(%s, %d)`, quote(h), p))
	}
	return execOn(ctx, withDatabase(admin, name), stmts...)
}

// sealCitusTemplate marks name a template on every worker that nobody may
// connect to, and ends the sessions in it (Citus' maintenance daemon).
func sealCitusTemplate(ctx context.Context, workers []string, name string) error {
	for _, w := range workers {
		if err := execOn(ctx, w,
			fmt.Sprintf(`ALTER DATABASE %s WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`, name),
			fmt.Sprintf(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s`, quote(name))); err != nil {
			return err
		}
	}
	return nil
}

// quote returns s as an SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// CitusNode is a worker node of the throw-away cluster of `scripts/citus
// test`, for tests that stop or kill it.
type CitusNode struct {
	Port int
	// URL is its maintenance database ("postgres").
	URL string
	// Dir holds the node's data directory (Dir/data, with postmaster.pid
	// and the port in invoiced.conf) and its log (Dir/server.log).
	Dir string
}

// DatabaseURL returns the URL of database name on the node: its URL with
// the path replaced.
func (n CitusNode) DatabaseURL(name string) string {
	u, err := url.Parse(n.URL)
	if err != nil { // CitusWorkers built it
		panic(err)
	}
	u.Path = "/" + name
	return u.String()
}

// CitusWorkers returns the worker nodes of the throw-away Citus cluster,
// from TEST_CITUS_WORKERS ("PORT:DIR PORT:DIR", which scripts/citus test
// exports). It fails the test when the variable is unset or malformed, or
// when its ports are not the workers the coordinator of TEST_DATABASE_URL
// knows.
func CitusWorkers(t testing.TB) []CitusNode {
	t.Helper()
	admin := AdminURL(t)
	known, err := workers(admin)
	if err != nil {
		t.Fatalf("dbtest: citus workers: %v", err)
	}
	raw := os.Getenv("TEST_CITUS_WORKERS")
	if raw == "" {
		t.Fatal("dbtest: TEST_CITUS_WORKERS is not set: run the test under scripts/citus test (make test-citus)")
	}
	var out []CitusNode
	for f := range strings.FieldsSeq(raw) {
		p, dir, ok := strings.Cut(f, ":")
		port, err := strconv.Atoi(p)
		if !ok || err != nil || dir == "" {
			t.Fatalf("dbtest: TEST_CITUS_WORKERS: %q is not PORT:DIR", f)
		}
		u, err := url.Parse(admin)
		if err != nil {
			t.Fatalf("dbtest: %v", err)
		}
		u.Host = net.JoinHostPort("127.0.0.1", p)
		out = append(out, CitusNode{Port: port, URL: u.String(), Dir: dir})
	}
	if len(out) != len(known) {
		t.Fatalf("dbtest: TEST_CITUS_WORKERS names %d workers, the coordinator knows %d", len(out), len(known))
	}
	for _, n := range out {
		found := false
		for _, k := range known {
			_, port, err := coordinatorAddress(k)
			found = found || err == nil && port == n.Port
		}
		if !found {
			t.Fatalf("dbtest: TEST_CITUS_WORKERS names port %d, which is no worker of the coordinator (%v)", n.Port, known)
		}
	}
	return out
}
