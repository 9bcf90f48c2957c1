// Package scripts_test runs the shell scripts a new operator meets first
// (scripts/run-demo, scripts/pg) the way they would.
package scripts_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/jackc/pgx/v5"
)

// build compiles cmd/invoiced into a temporary folder and returns its path.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "invoiced")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "../cmd/invoiced").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestVersionNamesTheRevision: a binary built as make build builds it
// (the revision passed with -X, as Go stamps none in a worktree or a
// source copy) prints the revision with --version.
func TestVersionNamesTheRevision(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "invoiced")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-ldflags", "-X main.revision=0123456789abcdef0123+modified", "-o", bin, "../cmd/invoiced").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^invoiced \S+ \(.*rev 0123456789ab\+modified, go1\.[0-9.]+\)\n$`).Match(out) {
		t.Fatalf("--version printed %q", out)
	}
}

// runDemo starts scripts/run-demo on the database url with ADDR=addr and
// returns the command (started) and its stdout.
func runDemo(t *testing.T, bin, url, addr string) (*exec.Cmd, io.Reader) {
	t.Helper()
	return runDemoWith(t, bin, url, filepath.Join(t.TempDir(), "demo-key"), "ADDR="+addr)
}

// runDemoWith starts scripts/run-demo on the database url keeping its key
// in keyfile, with the extra environment variables env (NAME=value), and
// returns the command (started) and its stdout.
func runDemoWith(t *testing.T, bin, url, keyfile string, env ...string) (*exec.Cmd, io.Reader) {
	t.Helper()
	cmd := exec.Command("./run-demo")
	cmd.Env = append(envWithout("ADDR", "INVOICED_ADDR"), "DATABASE_URL="+url, "INVOICED="+bin, "DEMO_KEYFILE="+keyfile)
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &testWriter{t: t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, stdout
}

// testWriter logs what a script prints on stderr.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestRunDemoBindsBeforeTheBanner: with ADDR taken, run-demo fails without
// printing the key or a curl (a pasted curl would send the key to whoever
// owns the port); with a free port, the URL the banner names is the one
// the server answers on, and SIGTERM stops both with status 0.
func TestRunDemoBindsBeforeTheBanner(t *testing.T) {
	t.Parallel()
	bin := build(t)
	url := dbtest.NewEmptyURL(t)

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cmd, stdout := runDemo(t, bin, url, taken.Addr().String())
	out, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err == nil {
		t.Fatalf("run-demo on a taken port exited 0; stdout:\n%s", out)
	}
	if strings.Contains(string(out), "Bearer") || strings.Contains(string(out), "ik_") {
		t.Fatalf("run-demo printed the key although the port was taken:\n%s", out)
	}

	cmd, stdout = runDemo(t, bin, url, "127.0.0.1:0")
	lines := bufio.NewScanner(stdout)
	urlLine := regexp.MustCompile(`^  URL +(http://127\.0\.0\.1:[0-9]+) `)
	keyLine := regexp.MustCompile(`^  API key +(ik_\S+) `)
	eInvoiceLine := regexp.MustCompile(`^  E-invoice DEMO/\S+ \(B2B\) registered at the local IRP: IRN [0-9a-f]{64}$`)
	var base, key, body string
	registered := false
	for lines.Scan() {
		registered = registered || eInvoiceLine.MatchString(lines.Text())
		if m := urlLine.FindStringSubmatch(lines.Text()); m != nil {
			base = m[1]
		}
		if m := keyLine.FindStringSubmatch(lines.Text()); m != nil {
			key = m[1]
		}
		if b, ok := strings.CutPrefix(lines.Text(), "  -d '"); ok {
			body = strings.TrimSuffix(b, "'")
			break
		}
	}
	if base == "" || strings.HasSuffix(base, ":0") {
		t.Fatalf("no bound URL in the banner (got %q)", base)
	}
	go io.Copy(io.Discard, stdout)
	// The banner's curl issues an invoice: its B2B body carries the
	// buyer's address Rule 46(d) asks for.
	req, err := http.NewRequest("POST", base+"/v1/series/CH1/invoices", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("the banner's curl body (%s) with key %q: %v %v", body, key, resp, err)
	} else {
		resp.Body.Close()
	}
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("the banner's URL does not answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s/healthz: %d", base, resp.StatusCode)
	}
	// The console has rows to show: five sample invoices in series DEMO
	// (issued before the banner, with curl when the machine has it).
	if _, err := exec.LookPath("curl"); err == nil {
		conn, err := pgx.Connect(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		var address string
		err = conn.QueryRow(t.Context(), `SELECT count(*), (SELECT address FROM sellers WHERE gstin = '27AAPFU0939F1ZV')
			FROM invoices WHERE number LIKE 'DEMO/%'`).Scan(&n, &address)
		conn.Close(t.Context())
		if err != nil || n != 5 {
			t.Fatalf("series DEMO holds %d sample invoices (%v), want 5", n, err)
		}
		if !strings.Contains(address, "Pune 411001") {
			t.Fatalf("the demo seller's address is %q: its receipts lack Rule 46(a)'s supplier address", address)
		}
		// The demo seller e-invoices: its B2B sample is registered at the
		// local IRP sandbox before the banner, which shows its IRN.
		if !registered {
			t.Fatal("the banner shows no registered e-invoice")
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run-demo after SIGTERM: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("run-demo did not stop within 60s of SIGTERM")
	}
}

// TestPgSurvivesAReclone: scripts/pg in a checkout whose .data/ is gone
// (removed and cloned again into the same path) finds the checkout's
// cluster again instead of refusing ("exists but holds no cluster"), and
// gives the same URL.
func TestPgSurvivesAReclone(t *testing.T) {
	t.Parallel()
	repo := filepath.Join(t.TempDir(), "checkout")
	if err := os.MkdirAll(filepath.Join(repo, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("pg")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "scripts", "pg"), src, 0o755); err != nil {
		t.Fatal(err)
	}
	pg := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		// Through bash, not exec of the copy: a test that forks while the
		// copy is being written (other tests here run in parallel) leaves
		// its write descriptor open in the child for a moment, and exec of
		// the file then fails with "text file busy".
		cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(repo, "scripts", "pg")}, args...)...)
		cmd.Env = envWithout("DATABASE_URL", "TEST_DATABASE_URL")
		cmd.Stderr = &testWriter{t: t}
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	link := filepath.Join(repo, ".data", "pg")
	t.Cleanup(func() {
		pg("stop")
		if dir, err := os.Readlink(link); err == nil {
			stopPostmaster(dir)
			os.RemoveAll(dir)
		}
	})
	first, err := pg("url")
	if err != nil {
		t.Fatalf("scripts/pg url: %v", err)
	}
	dir, linkErr := os.Readlink(link)
	if err := os.RemoveAll(filepath.Join(repo, ".data")); err != nil {
		t.Fatal(err)
	}
	if linkErr != nil {
		// Not root: the cluster was in .data/ and is gone with it; a new one
		// must start.
		if _, err := pg("url"); err != nil {
			t.Fatalf("scripts/pg url after removing .data/: %v", err)
		}
		return
	}
	t.Cleanup(func() { stopPostmaster(dir); os.RemoveAll(dir) })
	second, err := pg("url")
	if err != nil {
		t.Fatalf("scripts/pg url after a re-clone (running cluster): %v", err)
	}
	if second != first {
		t.Fatalf("after a re-clone: %s, want the same cluster %s", second, first)
	}
	// And with the cluster stopped before the re-clone.
	if _, err := pg("stop"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(repo, ".data")); err != nil {
		t.Fatal(err)
	}
	third, err := pg("url")
	if err != nil {
		t.Fatalf("scripts/pg url after a re-clone (stopped cluster): %v", err)
	}
	if got, _ := os.Readlink(link); got != dir {
		t.Fatalf("after a re-clone .data/pg points at %q, want %q", got, dir)
	}
	if third == "" {
		t.Fatal("no URL")
	}
}

// stopPostmaster ends the postmaster of the cluster in dir if one still
// runs after scripts/pg stop failed (its pid is the first line of
// data/postmaster.pid), so that a failing test leaves no server behind.
func stopPostmaster(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])); err == nil && pid > 0 {
		syscall.Kill(pid, syscall.SIGQUIT)
	}
}

// envWithout returns the environment without the named variables.
func envWithout(names ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		keep := true
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// activeKeys returns the prefixes of the demo seller's active API keys in
// the database at url.
func activeKeys(t *testing.T, url string) []string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	rows, err := conn.Query(t.Context(), `SELECT k.prefix FROM api_keys k JOIN sellers s ON s.id = k.seller_id
		WHERE s.gstin = '27AAPFU0939F1ZV' AND k.revoked_at IS NULL ORDER BY k.prefix`)
	if err != nil {
		t.Fatal(err)
	}
	prefixes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return prefixes
}

// serveDemo runs run-demo with env until its banner names the URL it
// listens on, then stops it with SIGTERM and returns that URL.
func serveDemo(t *testing.T, bin, url, keyfile string, env ...string) string {
	t.Helper()
	cmd, stdout := runDemoWith(t, bin, url, keyfile, env...)
	lines := bufio.NewScanner(stdout)
	urlLine := regexp.MustCompile(`^  URL +(http://\S+) `)
	var base string
	for lines.Scan() {
		if m := urlLine.FindStringSubmatch(lines.Text()); m != nil {
			base = m[1]
			break
		}
	}
	if base == "" {
		cmd.Wait()
		t.Fatal("run-demo printed no banner")
	}
	go io.Copy(io.Discard, stdout)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run-demo after SIGTERM: %v", err)
	}
	return base
}

// TestRunDemoKeepsOneDemoKey: running the demo again and again, with
// failed runs (a taken port) among them, leaves at most one active demo
// key, the one in the key file; a failed run on a fresh database makes
// none.
func TestRunDemoKeepsOneDemoKey(t *testing.T) {
	t.Parallel()
	bin := build(t)
	url := dbtest.NewEmptyURL(t)
	keyfile := filepath.Join(t.TempDir(), "demo-key")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	failed := func() {
		t.Helper()
		cmd, stdout := runDemoWith(t, bin, url, keyfile, "ADDR="+taken.Addr().String())
		io.Copy(io.Discard, stdout)
		if err := cmd.Wait(); err == nil {
			t.Fatal("run-demo on a taken port exited 0")
		}
	}
	check := func(step string, want int) {
		t.Helper()
		got := activeKeys(t, url)
		if len(got) != want {
			t.Fatalf("after %s the demo seller has active keys %v, want %d", step, got, want)
		}
		if want == 1 {
			if key, err := os.ReadFile(keyfile); err != nil || !strings.HasPrefix(string(key), "ik_"+got[0]+"_") {
				t.Fatalf("after %s the key file holds %.12q… (%v), not the active key %s", step, key, err, got[0])
			}
		}
	}
	failed()
	check("a failed first run", 0)
	serveDemo(t, bin, url, keyfile, "ADDR=127.0.0.1:0")
	check("one run", 1)
	failed()
	check("a failed second run", 1)
	serveDemo(t, bin, url, keyfile, "ADDR=127.0.0.1:0")
	check("a third run", 1)
}

// TestRunDemoHonoursInvoicedAddr: INVOICED_ADDR (serve's own variable)
// chooses the address when ADDR is not set.
func TestRunDemoHonoursInvoicedAddr(t *testing.T) {
	t.Parallel()
	bin := build(t)
	url := dbtest.NewEmptyURL(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	base := serveDemo(t, bin, url, filepath.Join(t.TempDir(), "demo-key"), "INVOICED_ADDR="+addr)
	if base != "http://"+addr {
		t.Fatalf("with INVOICED_ADDR=%s the demo listened on %s", addr, base)
	}
}

// TestBenchHelpStartsNothing: scripts/bench --help prints its usage and
// exits 0 without building, initialising or starting a cluster (it runs
// in a copy of the script with no scripts/pg beside it and no Go on PATH).
func TestBenchHelpStartsNothing(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("bench")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "scripts", "bench"), src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"--help", "-h"} {
		cmd := exec.CommandContext(t.Context(), "bash", filepath.Join(repo, "scripts", "bench"), arg)
		cmd.Env = append(envWithout("PATH", "DATABASE_URL"), "PATH=/usr/bin:/bin")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Usage:") || !strings.Contains(string(out), "--quick") {
			t.Fatalf("scripts/bench %s: %v\n%s", arg, err, out)
		}
		if entries, _ := os.ReadDir(repo); len(entries) != 1 {
			t.Fatalf("scripts/bench %s created %v beside scripts/", arg, entries)
		}
	}
}

// TestBenchABRefusesWithoutACommit: scripts/bench --ab without a commit,
// or with a name that is no commit, exits 2 saying which, before building
// a binary or starting a cluster (no Go on PATH, no scripts/pg beside it).
func TestBenchABRefusesWithoutACommit(t *testing.T) {
	t.Parallel()
	repo := copyScript(t, "bench")
	git := exec.CommandContext(t.Context(), "git", "init", "-q", repo)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ab"}, "--ab needs a commit"},
		{[]string{"--ab", "--duration", "3s"}, "--ab needs a commit"},
		{[]string{"--ab", "no-such-commit"}, "no-such-commit is not a commit"},
	} {
		cmd := exec.CommandContext(t.Context(), "bash", filepath.Join(repo, "scripts", "bench"))
		cmd.Args = append(cmd.Args, c.args...)
		cmd.Env = append(envWithout("PATH", "DATABASE_URL"), "PATH=/usr/bin:/bin")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Fatalf("scripts/bench %v: %v, want exit 2 saying %q\n%s", c.args, err, c.want, out)
		}
		if entries, _ := os.ReadDir(repo); len(entries) != 2 { // scripts and .git
			t.Fatalf("scripts/bench %v created %v beside scripts/", c.args, entries)
		}
	}
}

// copyScript copies scripts/name into a fresh checkout-like folder and
// returns that folder.
func copyScript(t *testing.T, names ...string) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "checkout")
	if err := os.MkdirAll(filepath.Join(repo, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, "scripts", name), src, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

// TestPgStartStartsTheClusterAlone: scripts/pg start starts the project's
// persistent cluster and runs nothing else; its URL answers, and pg url
// names the same cluster.
func TestPgStartStartsTheClusterAlone(t *testing.T) {
	t.Parallel()
	repo := copyScript(t, "pg")
	pg := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(repo, "scripts", "pg")}, args...)...)
		cmd.Env = envWithout("DATABASE_URL", "TEST_DATABASE_URL")
		cmd.Stderr = &testWriter{t: t}
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	link := filepath.Join(repo, ".data", "pg")
	t.Cleanup(func() {
		pg("stop")
		if dir, err := os.Readlink(link); err == nil {
			stopPostmaster(dir)
			os.RemoveAll(dir)
		}
	})
	started, err := pg("start")
	if err != nil {
		t.Fatalf("scripts/pg start: %v", err)
	}
	conn, err := pgx.Connect(t.Context(), started)
	if err != nil {
		t.Fatalf("scripts/pg start printed %q, which does not answer: %v", started, err)
	}
	conn.Close(t.Context())
	if url, err := pg("url"); err != nil || url != started {
		t.Fatalf("scripts/pg url after start: %q, %v; want %q", url, err, started)
	}
}

// TestPgNamesTheFixForAnUpgradedServer: the error a cluster gives when
// the PostgreSQL package was upgraded under it (a plpgsql.so of the new
// minor release, a postmaster of the old) makes scripts/pg say what
// happened and how to fix it; other errors are left alone.
func TestPgNamesTheFixForAnUpgradedServer(t *testing.T) {
	t.Parallel()
	explain := func(msg string) string {
		out, _ := exec.CommandContext(t.Context(), "bash", "-c", `source ./pg && explain_pg_error "$1"`, "bash", msg).CombinedOutput()
		return string(out)
	}
	upgraded := explain(`psql: error: connection to server at "127.0.0.1", port 5433 failed: FATAL:  could not load library "/usr/lib/postgresql/15/lib/plpgsql.so": /usr/lib/postgresql/15/lib/plpgsql.so: undefined symbol: AllocSetContextCreateInternal`)
	for _, want := range []string{"upgraded", "restart", "scripts/pg stop", "make db-start"} {
		if !strings.Contains(upgraded, want) {
			t.Fatalf("explain_pg_error on the undefined-symbol error printed %q, want it to name %q", upgraded, want)
		}
	}
	if other := explain(`FATAL:  password authentication failed for user "x"`); other != "" {
		t.Fatalf("explain_pg_error on another error printed %q, want nothing", other)
	}
}

// TestCitusBuildPinsServerHeaders: scripts/citus build asks apt for the
// server headers of exactly the installed server's version, so that
// installing them cannot upgrade the server under running clusters. It
// is checked with a dpkg-query that reports a server older than the
// archive's newest, without building anything.
func TestCitusBuildPinsServerHeaders(t *testing.T) {
	t.Parallel()
	repo := copyScript(t, "pg", "citus")
	fake := t.TempDir()
	dpkgQuery := `#!/bin/sh
# fake dpkg-query -W -f=FORMAT PACKAGE: postgresql-15 15.18 installed, the
# headers 15.20, nothing else.
for last; do :; done
case $last in
postgresql-15) printf '15.18-0+deb12u1 install ok installed' ;;
postgresql-server-dev-15) printf '15.20-0+deb12u1 install ok installed' ;;
*) exit 1 ;;
esac
`
	if err := os.WriteFile(filepath.Join(fake, "dpkg-query"), []byte(dpkgQuery), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "bash", "-c", `source scripts/citus && build_dep_specs`)
	cmd.Dir = repo
	cmd.Env = append(envWithout("PATH"), "PATH="+fake+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build_dep_specs: %v\n%s", err, out)
	}
	specs := strings.Fields(string(out))
	if !slices.Contains(specs, "postgresql-server-dev-15=15.18-0+deb12u1") || slices.Contains(specs, "postgresql-server-dev-15") {
		t.Fatalf("build_dep_specs = %q, want postgresql-server-dev-15 pinned to the server's 15.18-0+deb12u1", specs)
	}
	if !slices.Contains(specs, "libcurl4-openssl-dev") {
		t.Fatalf("build_dep_specs = %q, want the other dependencies unpinned", specs)
	}
	// Installed headers of another version than the server's count as
	// missing, and are asked for at the server's version.
	cmd = exec.CommandContext(t.Context(), "bash", "-c", `source scripts/citus && missing_build_deps`)
	cmd.Dir = repo
	cmd.Env = append(envWithout("PATH"), "PATH="+fake+":"+os.Getenv("PATH"))
	out, err = cmd.CombinedOutput()
	if missing := strings.Fields(string(out)); err != nil || !slices.Contains(missing, "postgresql-server-dev-15=15.18-0+deb12u1") {
		t.Fatalf("missing_build_deps = %q, %v; want the headers at the server's version", missing, err)
	}
}

// TestMutantsApply: every mutant under testdata/mutants still applies to
// the tree, so a change that moves a protection's code fails here, at once,
// rather than when `make mutants` next runs (which also compiles and judges
// them). No mutant at all is a failure too: the harness would judge nothing.
func TestMutantsApply(t *testing.T) {
	t.Parallel()
	patches, err := filepath.Glob("../testdata/mutants/*/*.patch")
	if err != nil {
		t.Fatal(err)
	}
	if len(patches) == 0 {
		t.Fatal("no mutant under testdata/mutants")
	}
	for _, p := range patches {
		out, err := exec.CommandContext(t.Context(), "git", "-C", "..", "apply", "--check", "--whitespace=nowarn", strings.TrimPrefix(p, "../")).CombinedOutput()
		if err != nil {
			t.Errorf("%s no longer applies (remake it against today's code): %v\n%s", p, err, out)
		}
	}
}

// TestREADMENamesEveryMakeTarget: README's table of make targets names
// every target `make help` lists, and no other, so the two never disagree.
func TestREADMENamesEveryMakeTarget(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("make", "-s", "-C", "..", "help").CombinedOutput()
	if err != nil {
		t.Fatalf("make help: %v\n%s", err, out)
	}
	help := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z0-9-]+) `).FindAllStringSubmatch(string(out), -1) {
		help[m[1]] = true
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Make targets\n")
	if !ok {
		t.Fatal(`README has no "## Make targets" section`)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`make ([a-z0-9-]+)`").FindAllStringSubmatch(table, -1) {
		listed[m[1]] = true
	}
	if len(help) < 10 {
		t.Fatalf("make help lists %d targets:\n%s", len(help), out)
	}
	for target := range help {
		if !listed[target] {
			t.Errorf("make help lists %s; README's table does not", target)
		}
	}
	for target := range listed {
		if !help[target] {
			t.Errorf("README's table lists make %s; make help does not", target)
		}
	}
}

// TestTestingDocListsEveryMutant: docs/testing.md's table of mutants is
// what scripts/mutants --table prints for every group but offline (whose
// mutants docs/offline.md presents), so the guarantee, the patch and the
// tests that kill it are documented as they are.
func TestTestingDocListsEveryMutant(t *testing.T) {
	t.Parallel()
	dirs, err := os.ReadDir("../testdata/mutants")
	if err != nil {
		t.Fatal(err)
	}
	var groups []string
	for _, d := range dirs {
		if d.IsDir() && d.Name() != "offline" {
			groups = append(groups, d.Name()+"/")
		}
	}
	want, err := exec.CommandContext(t.Context(), "./mutants", append([]string{"--table"}, groups...)...).Output()
	if err != nil {
		t.Fatalf("scripts/mutants --table: %v", err)
	}
	doc, err := os.ReadFile("../docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- mutants:begin -->\n", "<!-- mutants:end -->"
	_, rest, ok := strings.Cut(string(doc), begin)
	table, _, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatalf("docs/testing.md lacks the markers %q and %q", begin, end)
	}
	if table != string(want) {
		t.Errorf("docs/testing.md's table of mutants differs from scripts/mutants --table %s; paste its output between the markers.\ngot:\n%s\nwant:\n%s",
			strings.Join(groups, " "), table, want)
	}
}
