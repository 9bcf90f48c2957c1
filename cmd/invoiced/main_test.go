package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/invoiced/invoiced/sellers"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const demoGSTIN = "27AAPFU0939F1ZV"

// invoiceBody is an inter-state B2B invoice request (Maharashtra seller,
// Karnataka buyer) without invoice_date, so dated today in IST.
const invoiceBody = `{"buyer": {"gstin": "29AAGCB7383J1Z4", "name": "Bangalore Traders",
            "address": {"line1": "14 Residency Road", "city": "Bengaluru", "pin": "560025"}},
 "place_of_supply": "29",
 "items": [{"description": "Masala chai", "hsn": "0902", "quantity": "2",
            "unit_price": "10.00", "gst_rate": "5"}]}`

// fixture is a migrated database with a seller, its series CH1 and an API key
// with every scope, all made through the command line.
type fixture struct {
	url    string
	getenv func(string) string
	key    string
}

// dbEnv returns a getenv that knows only DATABASE_URL, set to url.
func dbEnv(url string) func(string) string {
	return func(k string) string {
		if k == "DATABASE_URL" {
			return url
		}
		return ""
	}
}

// cli runs the command line in-process with DATABASE_URL set to url and
// returns what it printed.
func cli(ctx context.Context, url string, args ...string) (stdout, stderr string, err error) {
	var out, errOut testwait.Buffer
	err = run(ctx, args, dbEnv(url), &out, &errOut)
	return out.String(), errOut.String(), err
}

// setup gives the test a fresh database and seeds it through the CLI:
// migrate, sellers add, series add, keys add.
func setup(t *testing.T) fixture {
	t.Helper()
	ctx := t.Context()
	url := dbtest.NewURL(t)
	must := func(args ...string) string {
		t.Helper()
		out, errOut, err := cli(ctx, url, args...)
		if err != nil {
			t.Fatalf("invoiced %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
		}
		return out
	}
	if out := must("migrate"); !regexp.MustCompile(`^schema version [1-9][0-9]*\n$`).MatchString(out) {
		t.Fatalf("migrate printed %q", out)
	}
	must("sellers", "add", "--gstin", demoGSTIN, "--name", "Demo Chai Stall, Pune")
	must("series", "add", "--gstin", demoGSTIN, "--code", "CH1", "--doc-type", "invoice",
		"--format", "CH1/{FY}/{SEQ:5}", "--shop", "Pune station stall")
	out := must("keys", "add", "--gstin", demoGSTIN, "--scopes", "issue,read,manage")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 1 || lines[0] == "" || strings.ContainsAny(lines[0], " \t") || !strings.HasSuffix(out, "\n") {
		t.Fatalf("keys add must print the key alone on one line; stdout = %q", out)
	}
	return fixture{
		url:    url,
		getenv: dbEnv(url),
		key:    lines[0],
	}
}

// issued is the part of a 201 answer the tests check.
type issued struct {
	Number string `json:"number"`
	Serial int64  `json:"serial"`
	FY     string `json:"fy"`
}

// issue posts invoiceBody to series CH1 with idemKey and returns the status
// and body, or the transport error.
func issue(ctx context.Context, c *http.Client, base, key, idemKey string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/series/CH1/invoices", strings.NewReader(invoiceBody))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idemKey)
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, body, nil
}

// waitListening polls out until it holds the "listening on" line and returns
// the URL, or fails the test after timeout.
func waitListening(t *testing.T, out, errOut *testwait.Buffer, done <-chan struct{}, timeout time.Duration) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^listening on (http://\S+)$`)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case <-done:
			t.Fatalf("serve exited before listening\nstdout: %s\nstderr: %s", out, errOut)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not print its address within %s\nstdout: %s\nstderr: %s", timeout, out, errOut)
	return ""
}

// TestEndToEnd drives the whole command line in-process: seeding through the
// CLI, serving on a free port, issuing an invoice over HTTP, revoking the
// key, and a prompt, clean return on cancellation.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()

	// A bad GSTIN (wrong check character) fails with the validation sentence.
	_, _, err := cli(ctx, f.url, "sellers", "add", "--gstin", "01AABCE2207R1Z5", "--name", "Bad")
	if err == nil || !errors.Is(err, gst.ErrInvalidGSTIN) || !strings.Contains(strings.ToLower(err.Error()), "gstin") {
		t.Fatalf("sellers add with a bad GSTIN: err = %v, want ErrInvalidGSTIN with a message about the GSTIN", err)
	}
	// A duplicate seller is refused; the list shows the first one.
	if _, _, err := cli(ctx, f.url, "sellers", "add", "--gstin", demoGSTIN, "--name", "Again"); !errors.Is(err, sellers.ErrExists) {
		t.Fatalf("duplicate sellers add: err = %v, want sellers.ErrExists", err)
	}
	// The contact printed on receipts is set by sellers update (and add).
	if _, _, err := cli(ctx, f.url, "sellers", "update", "--gstin", demoGSTIN, "--phone", "call me"); !errors.Is(err, gst.ErrInvalidSeries) {
		t.Fatalf("sellers update with a bad phone: err = %v, want ErrInvalidSeries", err)
	}
	if _, _, err := cli(ctx, f.url, "sellers", "update", "--gstin", demoGSTIN, "--address", "Platform 1, Pune Junction, Pune 411001", "--phone", "+91 20 2612 0000"); err != nil {
		t.Fatalf("sellers update: %v", err)
	}
	if _, _, err := cli(ctx, f.url, "sellers", "update", "--gstin", demoGSTIN, "--email", "chai@example.in"); err != nil {
		t.Fatalf("sellers update: %v", err)
	}
	out, _, err := cli(ctx, f.url, "sellers", "list")
	if err != nil || !strings.Contains(out, demoGSTIN) || !strings.Contains(out, "Demo Chai Stall, Pune") ||
		!strings.Contains(out, "Platform 1, Pune Junction, Pune 411001") || !strings.Contains(out, "+91 20 2612 0000") || !strings.Contains(out, "chai@example.in") {
		t.Fatalf("sellers list = %q, %v", out, err)
	}
	if out, _, err := cli(ctx, f.url, "keys", "list", "--gstin", demoGSTIN); err != nil || !strings.Contains(out, "active") || strings.Contains(out, f.key) {
		t.Fatalf("keys list = %q, %v (want one active key and no secret)", out, err)
	}
	// A key for one terminal: restricted to CH1, listed with its series;
	// an unknown series or the manage scope is refused.
	if out, _, err := cli(ctx, f.url, "keys", "add", "--gstin", demoGSTIN, "--scopes", "issue,read", "--series", "ch1"); err != nil || !strings.HasPrefix(out, "ik_") {
		t.Fatalf("keys add --series = %q, %v", out, err)
	}
	for _, bad := range [][]string{{"--scopes", "issue", "--series", "CH9"}, {"--scopes", "issue,manage", "--series", "CH1"}} {
		if _, _, err := cli(ctx, f.url, append([]string{"keys", "add", "--gstin", demoGSTIN}, bad...)...); !errors.Is(err, apikey.ErrInvalidKeySeries) {
			t.Fatalf("keys add %v: err = %v, want ErrInvalidKeySeries", bad, err)
		}
	}
	if out, _, err := cli(ctx, f.url, "keys", "list", "--gstin", demoGSTIN); err != nil || !regexp.MustCompile(`(?m)^[0-9a-f]{8}\s+issue,read\s+CH1\s`).MatchString(out) || !regexp.MustCompile(`(?m)^[0-9a-f]{8}\s+issue,read,manage\s+\*\s`).MatchString(out) {
		t.Fatalf("keys list = %q, %v (want the CH1 key with its series and the first with *)", out, err)
	}
	// For scripts: one object per key per line, status by name.
	if out, _, err := cli(ctx, f.url, "keys", "list", "--gstin", demoGSTIN, "--format", "json"); err != nil ||
		!regexp.MustCompile(`(?m)^\{"prefix":"[0-9a-f]{8}","scopes":\["issue","read"\],"series":\["CH1"\],"created_at":"[^"]+","status":"active","revoked_at":null\}$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\{"prefix":"[0-9a-f]{8}","scopes":\["issue","read","manage"\],"series":null,.*"status":"active"`).MatchString(out) {
		t.Fatalf("keys list --format json = %q, %v", out, err)
	}

	// Serve on a free port until cancel.
	srvCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var srvOut, srvErr testwait.Buffer
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = run(srvCtx, []string{"serve", "--addr", "127.0.0.1:0", "--lock-timeout", "5s", "--key-cache-ttl", "0"}, f.getenv, &srvOut, &srvErr)
	}()
	base := waitListening(t, &srvOut, &srvErr, done, 15*time.Second)

	// By default the pool is open before serve listens: --max-conns (32)
	// connections.
	conn, err := pgx.Connect(ctx, f.url)
	if err != nil {
		t.Fatal(err)
	}
	var backends int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'invoiced'`).Scan(&backends)
	conn.Close(ctx)
	if err != nil || backends < 32 {
		t.Fatalf("when serve listens, PostgreSQL has %d of its connections (%v), want the pool's 32", backends, err)
	}

	c := &http.Client{Timeout: 30 * time.Second}
	status, body, err := issue(ctx, c, base, f.key, "e2e-1")
	if err != nil || status != http.StatusCreated {
		t.Fatalf("issue: status %d, err %v, body %s", status, err, body)
	}
	var inv issued
	if err := json.Unmarshal(body, &inv); err != nil || inv.Serial != 1 || !strings.HasPrefix(inv.Number, "CH1/") {
		t.Fatalf("issue answered %s (%v), want serial 1 numbered CH1/…", body, err)
	}
	// Without a key: 401, not 500.
	resp, err := c.Post(base+"/v1/series/CH1/invoices", "application/json", strings.NewReader(invoiceBody))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("issue without a key: status %d, want 401", resp.StatusCode)
	}

	// Revoking the key locks it out.
	prefix := strings.SplitN(strings.TrimPrefix(f.key, "ik_"), "_", 2)[0]
	if out, errOut, err := cli(ctx, f.url, "keys", "revoke", "--prefix", prefix); err != nil {
		t.Fatalf("keys revoke: %v\n%s%s", err, out, errOut)
	}
	if status, body, err := issue(ctx, c, base, f.key, "e2e-2"); err != nil || status != http.StatusUnauthorized {
		t.Fatalf("issue with a revoked key: status %d, err %v, body %s; want 401", status, err, body)
	}

	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return within 10s of cancellation")
	}
	if runErr != nil {
		t.Fatalf("serve returned %v after cancellation, want nil\nstderr: %s", runErr, srvErr.String())
	}
	if _, err := c.Get(base + "/healthz"); err == nil {
		t.Fatal("server still answers after serve returned")
	}
}

// outcome is what one request of the load test got.
type outcome struct {
	status  int // 0 for a transport error
	err     error
	body    []byte
	inv     issued
	sentAt  time.Time
	gotAt   time.Time
	idemKey string
}

// TestSIGTERMDuringLoadLosesNoAcknowledgedInvoice runs the real binary under
// 16 concurrent issuers, sends SIGTERM, and checks that it exits 0, that
// every 201 is stored with the number and serial it announced, that serials
// stay 1..N, and that requests refused by the shutdown were refused cleanly.
func TestSIGTERMDuringLoadLosesNoAcknowledgedInvoice(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()

	bin := filepath.Join(t.TempDir(), "invoiced")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	var srvOut, srvErr testwait.Buffer
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--lock-timeout", "5s", "--max-conns", "8")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+f.url)
	cmd.Stdout, cmd.Stderr = &srvOut, &srvErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	})
	base := waitListening(t, &srvOut, &srvErr, exited, 30*time.Second)

	const workers = 16
	var (
		stop       atomic.Bool
		signalled  time.Time // zero until SIGTERM is sent
		resultsMu  sync.Mutex
		results    []outcome
		wg         sync.WaitGroup
		httpClient = &http.Client{
			Timeout:   60 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: workers},
		}
	)
	for w := range workers {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				o := outcome{idemKey: fmt.Sprintf("load-%d-%d", w, i), sentAt: time.Now()}
				o.status, o.body, o.err = issue(ctx, httpClient, base, f.key, o.idemKey)
				o.gotAt = time.Now()
				if o.status == http.StatusCreated {
					if err := json.Unmarshal(o.body, &o.inv); err != nil {
						o.err = fmt.Errorf("decode 201 body %q: %w", o.body, err)
					}
				}
				resultsMu.Lock()
				results = append(results, o)
				resultsMu.Unlock()
				if o.err != nil {
					// Refused after shutdown began; don't spin.
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}

	// SIGTERM once the load runs (every worker's requests answered 201,
	// twice over, is an event), not after a guessed second: on a loaded
	// machine the first requests may still be connecting then, and
	// nothing would be in flight to drain.
	testwait.Until(t, 30*time.Second, func() bool {
		resultsMu.Lock()
		defer resultsMu.Unlock()
		n := 0
		for _, o := range results {
			if o.status == http.StatusCreated {
				n++
			}
		}
		return n >= 2*workers
	}, "%d invoices acknowledged under load", 2*workers)
	signalled = time.Now() // read only after wg.Wait
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(45 * time.Second):
		stop.Store(true)
		t.Fatalf("serve did not exit within 45s of SIGTERM\nstderr: %s", srvErr.String())
	}
	exitedAt := time.Now()
	stop.Store(true)
	wg.Wait()
	if waitErr != nil {
		t.Fatalf("serve exited with %v after SIGTERM, want exit 0\nstderr: %s", waitErr, srvErr.String())
	}

	// Classify the answers.
	acked := map[string]issued{} // number → invoice
	var drained, refused, unavailable int
	for _, o := range results {
		switch {
		case o.err != nil && o.status == http.StatusCreated:
			t.Errorf("request %s: %v", o.idemKey, o.err)
		case o.err != nil:
			// No answer: fine once shutdown began (connection refused or
			// closed before the request was read), never before.
			if o.gotAt.Before(signalled) {
				t.Errorf("request %s failed before SIGTERM: %v", o.idemKey, o.err)
			}
			refused++
		case o.status == http.StatusCreated:
			if prev, dup := acked[o.inv.Number]; dup {
				t.Errorf("number %s acknowledged twice (%+v and %+v)", o.inv.Number, prev, o.inv)
			}
			acked[o.inv.Number] = o.inv
			if o.sentAt.Before(signalled) && o.gotAt.After(signalled) {
				drained++
			}
		case o.status == http.StatusServiceUnavailable:
			unavailable++
		default:
			t.Errorf("request %s: status %d, body %s (want 201, 503 or a refused connection)", o.idemKey, o.status, o.body)
		}
	}
	t.Logf("%d requests: %d acknowledged (%d of them in flight at SIGTERM), %d 503, %d refused; exit %s after SIGTERM",
		len(results), len(acked), drained, unavailable, refused, exitedAt.Sub(signalled).Round(time.Millisecond))
	if len(acked) == 0 {
		t.Fatalf("no invoice was acknowledged\nstderr: %s", srvErr.String())
	}
	if drained == 0 {
		t.Errorf("no request in flight at SIGTERM was answered 201: the drain was not exercised")
	}

	// Every acknowledged invoice is stored under its number and serial, and
	// each series-year's serials are exactly 1..N.
	conn, err := pgx.Connect(ctx, f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `
		SELECT i.fy, i.serial, i.number FROM invoices i JOIN series s ON s.id = i.series_id
		WHERE s.code = 'CH1' ORDER BY i.fy, i.serial`)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int64{}
	next := map[int]int64{} // fy → expected next serial
	var n int
	for rows.Next() {
		var fy int
		var serial int64
		var number string
		if err := rows.Scan(&fy, &serial, &number); err != nil {
			t.Fatal(err)
		}
		if next[fy] == 0 {
			next[fy] = 1
		}
		if serial != next[fy] {
			t.Fatalf("FY %d: serial %d follows %d: serials are not 1..N", fy, serial, next[fy]-1)
		}
		next[fy]++
		stored[number] = serial
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for number, inv := range acked {
		serial, ok := stored[number]
		switch {
		case !ok:
			t.Errorf("acknowledged invoice %s (serial %d) is not in the database", number, inv.Serial)
		case serial != inv.Serial:
			t.Errorf("acknowledged invoice %s had serial %d, the database has %d", number, inv.Serial, serial)
		}
	}
	if n < len(acked) {
		t.Errorf("%d invoices stored, fewer than the %d acknowledged", n, len(acked))
	}
}

// TestUsageErrors checks that command-line mistakes are usage errors (exit
// 2) that say what is wrong, and print nothing on stdout.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	// No database is needed: every mistake is caught before connecting.
	noEnv := func(string) string { return "" }
	tests := []struct {
		args []string
		want string // in the error message
	}{
		{nil, "no command"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"sellers"}, "sellers add|update|list"},
		{[]string{"sellers", "update", "--gstin", demoGSTIN}, "at least one of"},
		{[]string{"sellers", "remove"}, `unknown command "remove"`},
		{[]string{"sellers", "add", "--name", "X"}, "missing required flag --gstin"},
		{[]string{"sellers", "add"}, "--gstin, --name"},
		{[]string{"sellers", "add", "--gstin"}, "flag needs an argument"},
		{[]string{"series", "add", "--gstin", demoGSTIN, "--code", "CH1"}, "missing required flag --format"},
		{[]string{"keys", "add", "--gstin", demoGSTIN}, "missing required flag --scopes"},
		{[]string{"keys", "add", "--gstin", demoGSTIN, "--scopes", "issue,admin"}, `unknown scope "admin"`},
		{[]string{"keys", "revoke"}, "missing required flag --prefix"},
		{[]string{"serve", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"serve", "--backdate-days", "-1"}, "--backdate-days must be 0 or more"},
		{[]string{"serve", "--lock-timeout", "0s"}, "--lock-timeout must be positive"},
		{[]string{"serve", "--max-conns", "0"}, "--max-conns must be at least 1"},
		{[]string{"serve", "--batches-in-flight", "65"}, "--batches-in-flight must be 0 (auto) to 64"},
		{[]string{"serve", "--max-conns", "4", "--batches-in-flight", "5"}, "--batches-in-flight 5 exceeds --max-conns 4"},
		{[]string{"serve", "--min-conns", "33"}, "--min-conns must be -1"},
		{[]string{"serve", "--max-conns", "4", "--min-conns", "-2"}, "--min-conns must be -1"},
		{[]string{"serve", "--max-connections", "-1"}, "--max-connections must be 0"},
		{[]string{"serve", "--max-conns", "4", "--max-exports", "5"}, "--max-exports must be from 1 to --max-conns"},
		{[]string{"serve", "--export-stall-timeout", "0s"}, "--export-stall-timeout must be positive"},
		{[]string{"serve", "--failure-rate", "-1"}, "--failure-rate must be 0"},
		{[]string{"serve", "--rate-limit", "-1"}, "--rate-limit must be 0"},
		{[]string{"migrate", "extra"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		err := run(t.Context(), tt.args, noEnv, &out, &errOut)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("invoiced %q: err = %v, want a usage error", tt.args, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("invoiced %q: err = %q, want it to mention %q", tt.args, err, tt.want)
		}
		if out.Len() != 0 {
			t.Errorf("invoiced %q: printed %q on stdout on a usage error", tt.args, out.String())
		}
	}
}

// TestHelpListsEveryCommand checks help, -h and --help, and a command's -h.
func TestHelpListsEveryCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		var out, errOut bytes.Buffer
		if err := run(t.Context(), args, func(string) string { return "" }, &out, &errOut); err != nil {
			t.Fatalf("invoiced %q: %v", args, err)
		}
		for _, c := range commands() {
			if !strings.Contains(out.String(), "  "+c.name+" ") {
				t.Errorf("invoiced %q does not list %q:\n%s", args, c.name, out.String())
			}
		}
	}
	// A command's -h shows its flags and succeeds.
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"serve", "-h"}, func(string) string { return "" }, &out, &errOut); err != nil {
		t.Fatalf("serve -h: %v", err)
	}
	for _, flag := range []string{"-addr", "-backdate-days", "-lock-timeout", "-max-conns", "-min-conns", "-max-connections", "-idle-timeout", "-max-exports", "-export-stall-timeout", "-failure-rate"} {
		if !strings.Contains(errOut.String(), flag) {
			t.Errorf("serve -h does not describe %s:\n%s", flag, errOut.String())
		}
	}
}

// TestMissingDatabaseURL checks that commands needing the database say how
// to provide it.
func TestMissingDatabaseURL(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"migrate"}, {"sellers", "list"}, {"serve", "--addr", "127.0.0.1:0"}} {
		err := run(t.Context(), args, func(string) string { return "" }, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "DATABASE_URL is not set") {
			t.Errorf("invoiced %q without DATABASE_URL: err = %v", args, err)
		}
	}
}

// TestVersion checks that version prints one line.
func TestVersion(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(t.Context(), []string{"version"}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "invoiced ") || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("version printed %q", out.String())
	}
}

// TestServeRefusesAnUnmigratedDatabase: serve says to run migrate instead
// of starting on a schema older than its own.
func TestServeRefusesAnUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	getenv := dbEnv(dbtest.NewEmptyURL(t))
	err := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0"}, getenv, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "run `invoiced migrate` first") {
		t.Fatalf("serve on an empty database: err = %v", err)
	}
}

// TestWarmPoolOpensConnectionsUpFront checks that warmPool leaves the
// pool holding the connections it opened, idle and seen by PostgreSQL;
// that connect sets the pool's bounds; and that warmPool reports a
// database that refuses or never answers within its timeout.
func TestWarmPoolOpensConnectionsUpFront(t *testing.T) {
	t.Parallel()
	getenv := dbEnv(dbtest.NewEmptyURL(t))
	// No minimum, so nothing opens connections in the background: the six
	// are warmPool's.
	pool, err := connect(t.Context(), getenv, 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	n, err := warmPool(t.Context(), pool, 6, 10*time.Second)
	if err != nil || n < 6 {
		t.Fatalf("warmPool = %d, %v; want at least 6 connections and no error", n, err)
	}
	if st := pool.Stat(); st.AcquiredConns() != 0 || st.IdleConns() < 6 {
		t.Fatalf("after warmPool: %d acquired, %d idle; want 0 and at least 6", st.AcquiredConns(), st.IdleConns())
	}
	var open int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'invoiced'`).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open < 6 {
		t.Fatalf("PostgreSQL sees %d connections of the pool, want at least 6", open)
	}

	for _, tc := range []struct{ max, min, want int32 }{{8, 6, 6}, {4, 6, 4}, {8, 0, 0}} {
		p, err := connect(t.Context(), getenv, tc.max, tc.min)
		if err != nil {
			t.Fatal(err)
		}
		cfg := p.Config()
		if cfg.MinConns != tc.want || cfg.MaxConns != tc.max {
			t.Errorf("connect(max %d, min %d): pool min %d max %d, want min %d", tc.max, tc.min, cfg.MinConns, cfg.MaxConns, tc.want)
		}
		if cfg.MaxConnLifetimeJitter <= 0 {
			t.Errorf("connect: connections all expire at once (no lifetime jitter)")
		}
		p.Close()
	}

	// A port that refuses: the error comes back at once.
	refused, err := pgxpool.New(t.Context(), "postgres://nobody@127.0.0.1:1/none")
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	if n, err := warmPool(t.Context(), refused, 2, 5*time.Second); err == nil || n != 0 {
		t.Fatalf("warmPool on a refusing port = %d, %v; want 0 and an error", n, err)
	}
	// A server that accepts and never answers: warmPool gives up at its
	// timeout.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var heldMu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			heldMu.Lock()
			held = append(held, c)
			heldMu.Unlock()
		}
	}()
	silent, err := pgxpool.New(t.Context(), "postgres://nobody@"+ln.Addr().String()+"/none")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	n, err = warmPool(t.Context(), silent, 2, 300*time.Millisecond)
	d := time.Since(t0)
	ln.Close()
	heldMu.Lock()
	for _, c := range held {
		c.Close()
	}
	heldMu.Unlock()
	silent.Close()
	if err == nil || n != 0 {
		t.Fatalf("warmPool on a silent server = %d, %v; want 0 and an error", n, err)
	}
	if d > 3*time.Second {
		t.Fatalf("warmPool took %s with a 300ms timeout", d)
	}
}
