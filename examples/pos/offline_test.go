package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/internal/dbtest"
)

// posEnv makes the test binary run pos's main (TestMain).
const posEnv = "INVOICED_TEST_RUN_POS"

// pos starts this test binary as pos with args; its stdout is returned
// when it ends.
func pos(t *testing.T, args ...string) (*exec.Cmd, *lineBuffer, *lineBuffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), posEnv+"=1")
	var out, errOut lineBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, &out, &errOut
}

// TestOfflineSurvivesKills: a terminal leases series T07, then sells
// 2,000 invoices offline while the server is down, cancelling every
// seventh, SIGKILLed at random instants (in the middle of journal writes
// among them) and restarted each time. Every sale printed (its receipt)
// has a serial never printed before, in increasing order, and no
// cancellation is printed twice; once the server is back the terminal
// uploads and ends its lease, the series holds exactly 1..2000, the
// cancelled invoices are exactly the terminal's (every seventh serial,
// among them every cancellation printed) and `invoiced verify` passes.
func TestOfflineSurvivesKills(t *testing.T) {
	t.Parallel()
	const sales, cancelEvery = 2000, 7
	dbURL := dbtest.NewURL(t)
	bin.CLI(t, dbURL, "sellers", "add", "--gstin", sellerGSTIN, "--name", "Offline POS Stall")
	bin.CLI(t, dbURL, "series", "add", "--gstin", sellerGSTIN, "--code", "T07", "--format", "T07/{FY}/{SEQ:5}")
	key := strings.TrimSpace(bin.CLI(t, dbURL, "keys", "add", "--gstin", sellerGSTIN, "--scopes", "issue,read,manage"))
	srv := bin.Start(t, dbURL, "127.0.0.1:0")
	url := "http://" + srv.Addr
	journal := filepath.Join(t.TempDir(), "t07.journal")
	common := []string{"--offline", "--json", "--url", url, "--key", key, "--journal", journal, "--series", "T07", "--device", "till-7",
		"--max-backoff", "200ms", "--sale-timeout", "60s", "--cancel-every", fmt.Sprint(cancelEvery)}

	// Online once: the lease.
	cmd, _, errOut := pos(t, append(common, "--sales", "0")...)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("lease: %v\n%s", err, errOut)
	}
	srv.Kill()

	var printed []int64
	printedCancels := map[int64]bool{}
	kills := 0
	for run := 0; ; run++ {
		if run > 2000 {
			t.Fatalf("2000 sales not done after %d runs (%d printed)", run, len(printed))
		}
		cmd, out, errOut := pos(t, append(common, "--until-total", fmt.Sprint(sales))...)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// Kill once this run has sold something (so every run makes
		// progress whatever its start-up costs), at a random instant
		// after that: mostly in the middle of numbering and journal
		// writes.
		var err error
		exited := false
		sold := time.NewTicker(time.Millisecond)
	wait:
		for {
			select {
			case err = <-done:
				exited = true
				break wait
			case <-sold.C:
				if len(out.String()) > 0 {
					break wait
				}
			}
		}
		sold.Stop()
		if !exited {
			select {
			case err = <-done:
				exited = true
			case <-time.After(time.Duration(rand.IntN(150)) * time.Millisecond):
				_ = cmd.Process.Kill() // SIGKILL
				<-done
				kills++
			}
		}
		// Only whole lines were printed after their invoice was durable; a
		// line cut by the kill is not a receipt.
		text := out.String()
		if i := strings.LastIndexByte(text, '\n'); i >= 0 {
			text = text[:i]
		} else {
			text = ""
		}
		sc := bufio.NewScanner(strings.NewReader(text))
		for sc.Scan() {
			var s offlineSale
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				t.Fatalf("pos printed %q: %v", sc.Text(), err)
			}
			if s.CancelledAt != "" {
				if printedCancels[s.Serial] {
					t.Fatalf("run %d printed the cancellation of serial %d twice", run, s.Serial)
				}
				printedCancels[s.Serial] = true
				continue
			}
			if n := len(printed); n > 0 && s.Serial <= printed[n-1] {
				t.Fatalf("run %d printed serial %d after %d: a serial was reused", run, s.Serial, printed[n-1])
			}
			printed = append(printed, s.Serial)
		}
		if exited {
			if err != nil {
				t.Fatalf("run %d: %v\n%s", run, err, errOut)
			}
			break
		}
	}
	if kills < 3 {
		t.Fatalf("only %d kills landed; the test proves nothing", kills)
	}
	if printed[len(printed)-1] != sales {
		t.Fatalf("last receipt %d, want %d", printed[len(printed)-1], sales)
	}

	// The server is back: upload and end the lease.
	srv = srv.Restart(t)
	common[3] = "http://" + srv.Addr
	cmd, _, errOut = pos(t, append(common, "--until-total", fmt.Sprint(sales), "--end")...)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sync: %v\n%s", err, errOut)
	}
	var stored, cancelled []int64
	for page, err := range client.New(common[3], key).ListInvoices(t.Context(), "T07", client.ListOptions{Limit: 1000}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, inv := range page.Invoices {
			stored = append(stored, inv.Serial)
			if inv.Status == "cancelled" {
				cancelled = append(cancelled, inv.Serial)
			}
		}
	}
	want := make([]int64, sales)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if !slices.Equal(stored, want) {
		t.Fatalf("series holds %d invoices, want exactly 1..%d", len(stored), sales)
	}
	var wantCancelled []int64
	for s := int64(cancelEvery); s <= sales; s += cancelEvery {
		wantCancelled = append(wantCancelled, s)
	}
	if !slices.Equal(cancelled, wantCancelled) {
		t.Fatalf("%d invoices cancelled, want every %dth serial (%d): %v", len(cancelled), cancelEvery, len(wantCancelled), cancelled)
	}
	for s := range printedCancels {
		if _, ok := slices.BinarySearch(cancelled, s); !ok {
			t.Fatalf("the terminal printed the cancellation of serial %d; the server does not hold it", s)
		}
	}
	if len(printedCancels) < len(wantCancelled)-kills {
		t.Fatalf("%d cancellations printed over %d kills, want at least %d", len(printedCancels), kills, len(wantCancelled)-kills)
	}
	if v := bin.CLI(t, dbURL, "verify", "--gstin", sellerGSTIN); !strings.Contains(v, "verdict: intact") {
		t.Fatalf("verify:\n%s", v)
	}
	t.Logf("%d receipts printed over %d kills; %s", len(printed), kills, strings.TrimSpace(errOut.String()))
}
