package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/dbtest"
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
