package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testwait"
)

// TestEveryCommandAsksForMigrate: each command that uses the database,
// given one without the schema, says to run `invoiced migrate` instead of
// failing on a missing table.
func TestEveryCommandAsksForMigrate(t *testing.T) {
	t.Parallel()
	getenv := dbEnv(dbtest.NewEmptyURL(t))
	for _, args := range [][]string{
		{"sellers", "list"},
		{"sellers", "add", "--gstin", demoGSTIN, "--name", "Chai"},
		{"series", "list", "--gstin", demoGSTIN},
		{"series", "add", "--gstin", demoGSTIN, "--code", "CH1", "--doc-type", "invoice", "--format", "CH1/{FY}/{SEQ:5}"},
		{"keys", "list", "--gstin", demoGSTIN},
		{"keys", "add", "--gstin", demoGSTIN, "--scopes", "issue"},
		{"keys", "revoke", "--prefix", "abcdef01"},
		{"verify", "--gstin", demoGSTIN},
		{"report", "gstr1-docs", "--gstin", demoGSTIN, "--fp", "112026"},
		{"report", "audit", "--gstin", demoGSTIN, "--series", "CH1", "--fy", "2026-27", "--format", "csv"},
		{"serve", "--addr", "127.0.0.1:0"},
	} {
		err := run(t.Context(), args, getenv, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "run `invoiced migrate` first") {
			t.Errorf("invoiced %s on an empty database: err = %v, want it to ask for invoiced migrate", strings.Join(args, " "), err)
		}
	}
}

// TestDurationsNeedAUnit: a duration flag (or its environment variable)
// given a bare number says what is missing; 0 and proper durations pass.
func TestDurationsNeedAUnit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  map[string]string
	}{
		{args: []string{"serve", "--lock-timeout", "3"}},
		{args: []string{"serve", "--drain-timeout=1.5"}},
		{args: []string{"serve"}, env: map[string]string{"INVOICED_LOCK_TIMEOUT": "3"}},
	} {
		var stderr bytes.Buffer
		getenv := func(k string) string { return tc.env[k] }
		err := run(t.Context(), tc.args, getenv, io.Discard, &stderr)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "durations need a unit, e.g. 3s") {
			t.Errorf("invoiced %v with %v: err = %v, want a usage error naming the unit", tc.args, tc.env, err)
		}
	}
	// The usage still names the type of a duration flag.
	var stderr bytes.Buffer
	run(t.Context(), []string{"serve", "--lock-timeout", "3"}, func(string) string { return "" }, io.Discard, &stderr)
	if !strings.Contains(stderr.String(), "-lock-timeout duration") {
		t.Errorf("serve usage lost the duration type:\n%s", stderr.String())
	}
	for _, ok := range []string{"0", "3s", "250ms", "1m30s"} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		d := fs.Duration("d", time.Second, "")
		if err := parseFlags(fs, []string{"-d", ok}); err != nil {
			t.Errorf("-d %s: %v", ok, err)
		}
		if want, _ := time.ParseDuration(ok); *d != want {
			t.Errorf("-d %s = %v", ok, *d)
		}
	}
}

// TestApplyEnv: every flag not on the command line comes from its
// INVOICED_ variable; a flag given wins; a bad value names the variable.
func TestApplyEnv(t *testing.T) {
	t.Parallel()
	newFS := func() (*flag.FlagSet, *string, *int, *time.Duration, *bool) {
		fs := flag.NewFlagSet("invoiced serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return fs, fs.String("addr", "a", ""), fs.Int("max-conns", 1, ""), fs.Duration("lock-timeout", time.Second, ""), fs.Bool("batching", true, "")
	}
	env := map[string]string{"INVOICED_ADDR": "env-addr", "INVOICED_MAX_CONNS": "7", "INVOICED_LOCK_TIMEOUT": "5s", "INVOICED_BATCHING": "false"}
	getenv := func(k string) string { return env[k] }

	fs, addr, conns, lock, batching := newFS()
	if err := parseFlags(fs, []string{"--max-conns", "9"}); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(fs, getenv); err != nil {
		t.Fatal(err)
	}
	if *addr != "env-addr" || *conns != 9 || *lock != 5*time.Second || *batching {
		t.Fatalf("after env: addr %q conns %d lock %v batching %v; want env-addr, 9 (flag wins), 5s, false", *addr, *conns, *lock, *batching)
	}

	fs, _, _, _, _ = newFS()
	parseFlags(fs, nil)
	err := applyEnv(fs, func(k string) string {
		if k == "INVOICED_MAX_CONNS" {
			return "many"
		}
		return ""
	})
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "INVOICED_MAX_CONNS") {
		t.Fatalf("bad INVOICED_MAX_CONNS: err = %v, want a usage error naming it", err)
	}
	if envName("key-cache-ttl") != "INVOICED_KEY_CACHE_TTL" {
		t.Fatalf("envName(key-cache-ttl) = %s", envName("key-cache-ttl"))
	}
}

// TestUnansweredDatabaseNamesHostsAndWait: a database that does not answer
// is reported with every host of the URL and how long the attempt took.
func TestUnansweredDatabaseNamesHostsAndWait(t *testing.T) {
	t.Parallel()
	// Two ports nobody listens on.
	var addrs []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		ln.Close()
	}
	url := "postgres://nobody@" + addrs[0] + "," + addrs[1] + "/books?sslmode=disable&connect_timeout=2"
	err := run(t.Context(), []string{"sellers", "list"}, dbEnv(url), io.Discard, io.Discard)
	if err == nil {
		t.Fatal("sellers list against closed ports succeeded")
	}
	for _, want := range []string{addrs[0], addrs[1], `"books"`, "gave up after"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// TestVersionFlag: --version prints what `version` prints.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	var a, b bytes.Buffer
	noEnv := func(string) string { return "" }
	if err := run(t.Context(), []string{"--version"}, noEnv, &a, io.Discard); err != nil {
		t.Fatal(err)
	}
	run(t.Context(), []string{"version"}, noEnv, &b, io.Discard)
	if a.String() != b.String() || !strings.HasPrefix(a.String(), "invoiced ") {
		t.Fatalf("--version printed %q, version %q", a.String(), b.String())
	}
}

// TestServeMetricsAddrAndEnv runs serve with its address from
// INVOICED_ADDR and --metrics-addr: the API's /metrics answers 404, the
// metrics address serves the pool's gauges, and the invoice issued through
// the API is counted there.
func TestServeMetricsAddrAndEnv(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	getenv := func(k string) string {
		switch k {
		case "INVOICED_ADDR":
			return "127.0.0.1:0"
		case "INVOICED_MAX_CONNS":
			return "4"
		}
		return f.getenv(k)
	}
	var out, errOut testwait.Buffer
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = run(ctx, []string{"serve", "--metrics-addr", "127.0.0.1:0"}, getenv, &out, &errOut)
	}()
	base := waitListening(t, &out, &errOut, done, 15*time.Second)
	// Stdout holds the one line scripts wait for; the addresses of the
	// metrics and the console are in the JSON "listening" log line, not
	// plain lines among the JSON logs.
	if out.String() != "listening on "+base+"\n" {
		t.Fatalf("serve printed on stdout %q, want the listening line alone", out.String())
	}
	var listening struct{ Msg, Metrics, Console string }
	for _, line := range strings.Split(errOut.String(), "\n") {
		if json.Unmarshal([]byte(line), &listening) == nil && listening.Msg == "listening" {
			break
		}
	}
	if listening.Metrics == "" || strings.HasPrefix(listening.Metrics, base) || listening.Console != base+"/console/" {
		t.Fatalf("serve --metrics-addr logged %+v:\n%s", listening, errOut.String())
	}
	m := []string{"", listening.Metrics}
	c := &http.Client{Timeout: 10 * time.Second}
	if status, body, err := issue(ctx, c, base, f.key, "metrics-1"); err != nil || status != http.StatusCreated {
		t.Fatalf("issue: %d %s %v", status, body, err)
	}
	get := func(url string) (int, string) {
		res, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if status, _ := get(base + "/metrics"); status != http.StatusNotFound {
		t.Errorf("GET /metrics on the API address with --metrics-addr: %d, want 404", status)
	}
	status, text := get(m[1])
	for _, want := range []string{"invoiced_db_pool_max_conns 4", `invoiced_invoices_issued_total{doc_type="invoice",source="online"} 1`, "invoiced_chain_verify_runs_total"} {
		if status != http.StatusOK || !strings.Contains(text, want) {
			t.Errorf("metrics address (%d) lacks %q", status, want)
		}
	}
	cancel()
	<-done
	if runErr != nil {
		t.Fatalf("serve: %v\n%s", runErr, errOut.String())
	}
}

// TestServeMetricsToken: with --metrics-addr off and --metrics-token, the
// API's address serves /metrics to the token alone (401 without it, or
// with an API key); a token under 16 characters is a usage error.
func TestServeMetricsToken(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const token = "0123456789abcdef-metrics"
	var out, errOut testwait.Buffer
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--max-conns", "4", "--metrics-addr", "off", "--metrics-token", token}, f.getenv, &out, &errOut)
	}()
	base := waitListening(t, &out, &errOut, done, 15*time.Second)
	c := &http.Client{Timeout: 10 * time.Second}
	for _, bearer := range []string{"", f.key, token} {
		req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		want := http.StatusUnauthorized
		if bearer == token {
			want = http.StatusOK
		}
		if res.StatusCode != want || want == http.StatusOK && !strings.Contains(string(body), "invoiced_db_pool_max_conns 4") {
			t.Errorf("GET /metrics with %q: %d, want %d: %.200s", bearer, res.StatusCode, want, body)
		}
	}
	cancel()
	<-done
	if runErr != nil {
		t.Fatalf("serve: %v\n%s", runErr, errOut.String())
	}
	err := run(t.Context(), []string{"serve", "--metrics-token", "short"}, f.getenv, io.Discard, io.Discard)
	var ue *usageError
	if !errors.As(err, &ue) {
		t.Fatalf("--metrics-token short: %v, want a usage error", err)
	}
}

// TestKeyRetentionUnderAWeekIsRefused: a retention of idempotency keys
// under 7 days is refused (the purge itself: internal/maintenance,
// TestKeyPurgeKeepsTheRetention).
func TestKeyRetentionUnderAWeekIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	err := run(t.Context(), []string{"serve", "--idempotency-retention", "48h"}, f.getenv, io.Discard, io.Discard)
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "at least") {
		t.Fatalf("--idempotency-retention 48h: %v, want a usage error", err)
	}
}

// TestREADMEListsEveryServeVariable: the configuration page README links
// (docs/configuration.md) names in its table the environment variable of
// every serve flag, and in its flag paragraphs every flag.
func TestREADMEListsEveryServeVariable(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	run(t.Context(), []string{"serve", "-h"}, func(string) string { return "" }, io.Discard, &stderr)
	names := regexp.MustCompile(`\[env (INVOICED_[A-Z_]+)\]`).FindAllStringSubmatch(stderr.String(), -1)
	if len(names) < 10 {
		t.Fatalf("serve -h names %d variables:\n%s", len(names), stderr.String())
	}
	for _, n := range names {
		if !strings.Contains(string(readme), "`"+n[1]+"`") {
			t.Errorf("docs/configuration.md does not list %s", n[1])
		}
	}
	flags := regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(stderr.String(), -1)
	for _, f := range flags {
		if !strings.Contains(string(readme), "`--"+f[1]) {
			t.Errorf("docs/configuration.md's serve flags do not name --%s", f[1])
		}
	}
}
