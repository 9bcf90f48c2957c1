package bench

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// scripts holds the pgbench scripts and the schema they run on.
//
//go:embed pgbench/*.sql pgbench/citus/*.sql
var scripts embed.FS

// baseline is one single-invoice-per-transaction design run with pgbench.
type baseline struct {
	name    string // short name, as in --baselines
	script  string // file under pgbench/
	label   string // what the table calls it
	gapFree bool   // whether it claims gap-free numbering (checked if so)
	counter string // how its counter is read for the check: "counter", "django" or ""
	// onCitus: it has a form for a Citus coordinator, on tables
	// distributed by seller, under pgbench/citus/ with the same file name;
	// without one it is not run there.
	onCitus bool
}

// baselines lists the designs in the order they are run and printed.
var baselines = []baseline{
	{"interactive", "interactive.sql", "(a) interactive BEGIN/UPDATE/INSERT/COMMIT", true, "counter", true},
	{"onestatement", "onestatement.sql", "(b) one statement (CTE)", true, "counter", true},
	{"django", "django.sql", "(c) django-sequences upsert", true, "django", false},
	{"forupdate", "forupdate.sql", "(c) SELECT FOR UPDATE + UPDATE", true, "counter", true},
	{"nowait", "nowait.sql", "(c) Odoo FOR UPDATE NOWAIT", true, "counter", true},
	{"nextval", "nextval.sql", "(c) nextval (not gap-free)", false, "", false},
}

// BaselineNames returns the names --baselines accepts, in run order.
func BaselineNames() []string {
	out := make([]string, len(baselines))
	for i, b := range baselines {
		out[i] = b.name
	}
	return out
}

// baselineByName returns the baseline called name.
func baselineByName(name string) (baseline, bool) {
	for _, b := range baselines {
		if b.name == name {
			return b, true
		}
	}
	return baseline{}, false
}

// pgbenchResult is what pgbench printed about one run.
type pgbenchResult struct {
	Processed      int64   // number of transactions actually processed
	Failed         int64   // number of failed transactions
	TPS            float64 // tps without initial connection time
	LatencyAvg     time.Duration
	AbortedClients int  // "client N ... aborted" lines on stderr
	RunAborted     bool // "Run was aborted"
	AbortReason    string
}

var (
	reProcessed = regexp.MustCompile(`(?m)^number of transactions actually processed: (\d+)`)
	reFailed    = regexp.MustCompile(`(?m)^number of failed transactions: (\d+)`)
	reTPS       = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)`)
	reLatAvg    = regexp.MustCompile(`(?m)^latency average = ([0-9.]+) ms`)
	reAborted   = regexp.MustCompile(`(?m)client \d+ (?:script \d+ )?aborted(?: in command \d+(?: query \d+)?)?: (.*)$`)
)

// parsePgbench reads pgbench 15's stdout and stderr. It fails when stdout
// has no tps line (pgbench did not get to run).
func parsePgbench(stdout, stderr []byte) (pgbenchResult, error) {
	var r pgbenchResult
	m := reTPS.FindSubmatch(stdout)
	if m == nil {
		return r, fmt.Errorf("pgbench printed no tps line; stderr: %s", lastLines(stderr, 5))
	}
	r.TPS, _ = strconv.ParseFloat(string(m[1]), 64)
	if m := reProcessed.FindSubmatch(stdout); m != nil {
		r.Processed, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	if m := reFailed.FindSubmatch(stdout); m != nil {
		r.Failed, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	if m := reLatAvg.FindSubmatch(stdout); m != nil {
		ms, _ := strconv.ParseFloat(string(m[1]), 64)
		r.LatencyAvg = time.Duration(ms * float64(time.Millisecond))
	}
	for _, m := range reAborted.FindAllSubmatch(stderr, -1) {
		r.AbortedClients++
		if r.AbortReason == "" {
			r.AbortReason = strings.Join(strings.Fields(string(m[1])), " ")
		}
	}
	r.RunAborted = bytes.Contains(stderr, []byte("Run was aborted"))
	return r, nil
}

// parseTxLog appends the latencies in a pgbench per-transaction log (-l) to
// lat: the third column, in microseconds; failed or skipped transactions
// (non-numeric) are left out.
func parseTxLog(r io.Reader, lat []time.Duration) ([]time.Duration, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		us, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			continue
		}
		lat = append(lat, time.Duration(us)*time.Microsecond)
	}
	return lat, sc.Err()
}

// lastLines returns the last n lines of b, trimmed, for error messages.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// findPgbench returns the pgbench binary: explicit if set, else from PATH,
// pg_config --bindir, or the newest /usr/lib/postgresql/*/bin (as
// scripts/pg finds PostgreSQL).
func findPgbench(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p, nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "pgbench")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) < versionOf(dirs[j]) })
	if len(dirs) > 0 {
		return dirs[len(dirs)-1], nil
	}
	return "", errors.New("pgbench not found (install postgresql-client or pass --pgbench)")
}

// versionOf returns the major version in a /usr/lib/postgresql/N/bin path.
func versionOf(p string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
	return n
}

// resetBaseline recreates the bench schema and seeds nseries counter rows
// and sequences, connecting directly (not through the proxy). With
// nsellers > 0 (a Citus coordinator) it makes pgbench/citus/setup.sql's
// tables, distributed by seller, series s of seller 1 + (s-1) % nsellers,
// and no sequences.
func resetBaseline(ctx context.Context, dbURL string, nseries, nsellers int) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("pgbench setup: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	file := "pgbench/setup.sql"
	if nsellers > 0 {
		file = "pgbench/citus/setup.sql"
	}
	setup, err := scripts.ReadFile(file)
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, string(setup)); err != nil {
		return fmt.Errorf("pgbench setup: %w", err)
	}
	if nsellers > 0 {
		if _, err := conn.Exec(ctx, `INSERT INTO bench.bench_counter (seller, series, last_serial)
			SELECT 1 + (g - 1) % $2::int, g, 0 FROM generate_series(1, $1::int) g`, nseries, nsellers); err != nil {
			return fmt.Errorf("pgbench setup: %w", err)
		}
		return nil
	}
	if _, err := conn.Exec(ctx, `INSERT INTO bench.bench_counter (series, last_serial) SELECT g, 0 FROM generate_series(1, $1::int) g`, nseries); err != nil {
		return fmt.Errorf("pgbench setup: %w", err)
	}
	for i := 1; i <= nseries; i++ {
		if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE SEQUENCE bench.seq_%d", i)); err != nil {
			return fmt.Errorf("pgbench setup: %w", err)
		}
	}
	// Settle the new tables so every design starts from the same state.
	// CHECKPOINT needs superuser (or pg_checkpoint); without it there is
	// only more noise, so its error is ignored.
	_, _ = conn.Exec(ctx, "CHECKPOINT")
	return nil
}

// checkBaseline verifies, for a gap-free baseline, that each series' serials
// are exactly 1..N and its counter equals N (on Citus, with the tables of
// pgbench/citus/setup.sql). It returns the total row count, and a
// description of the first violation ("" when contiguous).
func checkBaseline(ctx context.Context, dbURL string, b baseline, citus bool) (rows int64, problem string, err error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	counterSQL := "NULL::bigint"
	switch b.counter {
	case "counter":
		counterSQL = "(SELECT last_serial FROM bench.bench_counter c WHERE c.series = i.series)"
	case "django":
		counterSQL = "(SELECT last FROM bench.bench_django_seq d WHERE d.name = 'invoice-' || i.series)"
	}
	q := `SELECT series, count(*), count(DISTINCT serial), min(serial), max(serial), ` + counterSQL + `
		FROM bench.bench_invoice i GROUP BY series ORDER BY series`
	if citus {
		// A join on the distribution column instead of a correlated
		// subquery, grouped by it too: Citus runs it on every shard.
		q = `SELECT i.series, count(*), count(DISTINCT i.serial), min(i.serial), max(i.serial), c.last_serial
			FROM bench.bench_invoice i JOIN bench.bench_counter c ON c.seller = i.seller AND c.series = i.series
			GROUP BY i.seller, i.series, c.last_serial ORDER BY i.series`
	}
	r, err := conn.Query(ctx, q)
	if err != nil {
		return 0, "", err
	}
	defer r.Close()
	for r.Next() {
		var series int
		var n, distinct, lo, hi int64
		var counter *int64
		if err := r.Scan(&series, &n, &distinct, &lo, &hi, &counter); err != nil {
			return 0, "", err
		}
		rows += n
		if !b.gapFree || problem != "" {
			continue
		}
		switch {
		case distinct != n || lo != 1 || hi != n:
			problem = fmt.Sprintf("series %d: %d rows, %d distinct serials, min %d, max %d (want 1..%d)", series, n, distinct, lo, hi, n)
		case counter != nil && *counter != n:
			problem = fmt.Sprintf("series %d: counter says %d, %d rows", series, *counter, n)
		}
	}
	return rows, problem, r.Err()
}

// pgbenchRun is one pgbench invocation.
type pgbenchRun struct {
	bin      string
	dbURL    string // through the proxy when latency is injected
	clients  int
	nseries  int
	nsellers int // passed as :nsellers when above 0 (the Citus scripts)
	duration time.Duration
	script   string // under pgbench/
}

// run writes the script to a temporary folder, runs pgbench with per-
// transaction logging, and returns the parsed summary and the latencies.
// A non-zero exit is not an error when pgbench still printed its summary
// (aborted clients exit 2); the abort count says what happened.
func (p pgbenchRun) run(ctx context.Context) (pgbenchResult, []time.Duration, error) {
	dir, err := os.MkdirTemp("", "invoiced-pgbench-")
	if err != nil {
		return pgbenchResult{}, nil, err
	}
	defer os.RemoveAll(dir)
	body, err := scripts.ReadFile("pgbench/" + p.script)
	if err != nil {
		return pgbenchResult{}, nil, err
	}
	scriptPath := filepath.Join(dir, filepath.Base(p.script))
	if err := os.WriteFile(scriptPath, body, 0o644); err != nil {
		return pgbenchResult{}, nil, err
	}
	threads := min(p.clients, runtime.NumCPU())
	args := []string{
		"-n",             // no vacuum of pgbench's own tables
		"-M", "extended", // parameters bound per statement, as drivers do
		"-c", strconv.Itoa(p.clients),
		"-j", strconv.Itoa(threads),
		"-T", strconv.Itoa(max(1, int(p.duration.Round(time.Second)/time.Second))),
		"-D", "nseries=" + strconv.Itoa(p.nseries),
		"-l", "--log-prefix=" + filepath.Join(dir, "tx"),
		"-f", scriptPath,
		p.dbURL,
	}
	if p.nsellers > 0 {
		args = slices.Insert(args, len(args)-3, "-D", "nsellers="+strconv.Itoa(p.nsellers))
	}
	cmd := exec.CommandContext(ctx, p.bin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	res, err := parsePgbench(stdout.Bytes(), stderr.Bytes())
	if err != nil {
		if runErr != nil {
			return res, nil, fmt.Errorf("pgbench %s: %v: %w", p.script, runErr, err)
		}
		return res, nil, fmt.Errorf("pgbench %s: %w", p.script, err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "tx.*"))
	var lat []time.Duration
	for _, l := range logs {
		f, err := os.Open(l)
		if err != nil {
			return res, nil, err
		}
		lat, err = parseTxLog(f, lat)
		f.Close()
		if err != nil {
			return res, nil, err
		}
	}
	return res, lat, nil
}
