package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/servetest"
)

const sellerGSTIN = "27AAPFU0939F1ZV"

// bin is the invoiced binary, built once by TestMain.
var bin *servetest.Binary

// TestMain runs pos itself when the test binary is started as pos by a
// test (posEnv set), so that tests can kill it; otherwise the tests.
func TestMain(m *testing.M) {
	if os.Getenv(posEnv) == "1" {
		main()
		os.Exit(0)
	}
	servetest.Main(m, "pos", &bin)
}

// lineBuffer is stdout shared by pos's terminals and the test.
type lineBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lineBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *lineBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Split(strings.TrimSpace(b.buf.String()), "\n")
}

// TestSalesSurviveTwoKills runs pos against a real `invoiced serve` that
// is killed with SIGKILL and restarted twice while the terminals sell: N
// sales give exactly N invoices, serials 1..N, and every sale learns its
// number (some from the replay of an attempt whose answer the kill lost).
func TestSalesSurviveTwoKills(t *testing.T) {
	t.Parallel()
	const sales, terminals = 240, 6
	dbURL := dbtest.NewURL(t)
	bin.CLI(t, dbURL, "sellers", "add", "--gstin", sellerGSTIN, "--name", "POS Test Stall")
	bin.CLI(t, dbURL, "series", "add", "--gstin", sellerGSTIN, "--code", "CH1", "--format", "CH1/{FY}/{SEQ:6}")
	key := strings.TrimSpace(bin.CLI(t, dbURL, "keys", "add", "--gstin", sellerGSTIN, "--scopes", "issue,read"))
	srv := bin.Start(t, dbURL, "127.0.0.1:0")
	url := "http://" + srv.Addr

	var out, errOut lineBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(t.Context(), []string{"--url", url, "--key", key, "--sales", fmt.Sprint(sales),
			"--terminals", fmt.Sprint(terminals), "--think", "15ms", "--max-backoff", "300ms", "--sale-timeout", "90s", "--json"},
			func(string) string { return "" }, &out, &errOut)
	}()
	// Kill when a third and when two thirds of the sales have printed.
	for _, at := range []int{sales / 3, 2 * sales / 3} {
		deadline := time.Now().Add(60 * time.Second)
		for len(out.lines()) < at {
			if time.Now().After(deadline) {
				t.Fatalf("only %d sales printed within 60s\n%s", len(out.lines()), srv.Stderr())
			}
			time.Sleep(2 * time.Millisecond)
		}
		srv.Kill()
		time.Sleep(100 * time.Millisecond) // attempts meet a closed port
		srv = srv.Restart(t)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pos: %v\n%s", err, strings.Join(errOut.lines(), "\n"))
		}
	case <-time.After(120 * time.Second):
		t.Fatal("pos did not finish within 120s")
	}

	var got []int64
	replayed := 0
	numbers := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(strings.Join(out.lines(), "\n")))
	for sc.Scan() {
		var s sale
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("pos printed %q: %v", sc.Text(), err)
		}
		if s.Number == "" || s.Error != "" {
			t.Fatalf("sale %d did not learn its number: %+v", s.Sale, s)
		}
		numbers[s.Number] = true
		got = append(got, s.Serial)
		if s.Replayed {
			replayed++
		}
	}
	slices.Sort(got)
	want := make([]int64, sales)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if !slices.Equal(got, want) || len(numbers) != sales {
		t.Fatalf("sales learnt serials %v (%d numbers), want 1..%d", got, len(numbers), sales)
	}
	// The database agrees: exactly N invoices, serials 1..N.
	var stored []int64
	for page, err := range client.New(url, key).ListInvoices(t.Context(), "CH1", client.ListOptions{Limit: 1000}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, inv := range page.Invoices {
			stored = append(stored, inv.Serial)
		}
	}
	if !slices.Equal(stored, want) {
		t.Fatalf("series holds %d invoices %v, want 1..%d", len(stored), stored, sales)
	}
	t.Logf("%d sales, %d learnt from a replay; %s", sales, replayed, strings.Join(errOut.lines(), " "))
}

// TestFlags refuses a run without a key, with no sales, or with stray
// arguments, before any request.
func TestFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--sales", "1"},
		{"--key", "k", "--sales", "0"},
		{"--key", "k", "--terminals", "0"},
		{"--key", "k", "--series", ","},
		{"--key", "k", "extra"},
	} {
		var out, errOut bytes.Buffer
		if err := run(t.Context(), args, func(string) string { return "" }, &out, &errOut); err == nil || out.Len() > 0 {
			t.Errorf("%v: err %v, stdout %q", args, err, out.String())
		}
	}
}
