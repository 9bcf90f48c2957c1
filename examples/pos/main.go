// Command pos simulates point-of-sale terminals issuing invoices through
// the Go client: N sales spread over M terminals, each sale retried with
// its own Idempotency-Key until it learns its invoice number.
//
//	go run ./examples/pos --url http://127.0.0.1:8080 --key "$(cat .data/demo-key)" --sales 100 --terminals 4
//
// Each sale prints one line of plain text (one JSON object with --json).
// It exits 1 when any sale did not learn its number within --sale-timeout.
//
// With --offline it is one terminal that numbers a leased series itself
// on a durable journal (client/offline, docs/offline.md), so it sells
// while the server is down. The series (--series, default T01) is created
// when the seller has none of that code (a key with manage), else pos
// names the command that creates it; --sales N makes N new sales;
// --cancel-every N cancels every sale whose serial is a multiple of N,
// offline too; --upload sends what it numbered and cancelled, reporting
// each attempt while the server does not answer; --end ends the lease:
//
//	go run ./examples/pos --offline --journal t07.journal --series T07 --device till-7 --sales 100 --cancel-every 7 --upload
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/invoiced/invoiced/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pos:", err)
		os.Exit(1)
	}
}

// sale is what one sale learnt.
type sale struct {
	Terminal int    `json:"terminal"`
	Sale     int    `json:"sale"`
	Key      string `json:"key"`
	ID       string `json:"id,omitempty"`
	Number   string `json:"number,omitempty"`
	Serial   int64  `json:"serial,omitempty"`
	Series   string `json:"series"`
	Replayed bool   `json:"replayed,omitempty"`
	Error    string `json:"error,omitempty"`
	Unknown  bool   `json:"outcome_unknown,omitempty"`
}

// config is pos's flags.
type config struct {
	url, key, runID string
	sales, terms    int
	series          []string
	think           time.Duration
	saleTimeout     time.Duration
	maxBackoff      time.Duration
	json            bool

	offline     bool
	journal     string
	device      string
	upload, end bool
	cancelEvery int
	untilTotal  int
}

func parse(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("pos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var series string
	def := func(name, fallback string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return fallback
	}
	fs.StringVar(&c.url, "url", def("INVOICED_URL", "http://127.0.0.1:8080"), "server base URL (INVOICED_URL)")
	fs.StringVar(&c.key, "key", getenv("INVOICED_KEY"), "API key with the issue scope (INVOICED_KEY)")
	fs.IntVar(&c.sales, "sales", 100, "sales to make in this run (with --offline too: new sales, added to what the journal holds)")
	fs.IntVar(&c.terms, "terminals", 4, "terminals selling at once; sale i goes to terminal i mod M")
	fs.StringVar(&series, "series", "", "comma-separated series; terminal t issues in series[t mod len] (default CH1; with --offline the one series leased to this till, default T01, created when missing)")
	fs.DurationVar(&c.think, "think", 0, "pause between two sales of a terminal")
	fs.DurationVar(&c.saleTimeout, "sale-timeout", 2*time.Minute, "how long a sale may retry before it gives up (outcome unknown)")
	fs.DurationVar(&c.maxBackoff, "max-backoff", 2*time.Second, "longest wait between two attempts of a sale")
	fs.StringVar(&c.runID, "run-id", "", "prefix of the sales' Idempotency-Keys; the same id and sale resume a run (default random)")
	fs.BoolVar(&c.json, "json", false, "print each sale as a JSON object (default: a line of plain text)")
	fs.BoolVar(&c.offline, "offline", false, "one terminal numbering a leased series itself on --journal (sells while the server is down)")
	fs.StringVar(&c.journal, "journal", "pos.journal", "with --offline: the journal file")
	fs.StringVar(&c.device, "device", "till-1", "with --offline: the device id a new journal leases the series to")
	fs.BoolVar(&c.upload, "upload", false, "with --offline: upload what is pending after selling")
	fs.BoolVar(&c.end, "end", false, "with --offline: upload, then end the lease")
	fs.IntVar(&c.cancelEvery, "cancel-every", 0, "with --offline: cancel every sale whose serial is a multiple of N (0: none)")
	fs.IntVar(&c.untilTotal, "until-total", 0, "with --offline: instead of --sales new sales, sell until the journal holds N invoices (a killed run continues where it stopped)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.key == "":
		return c, errors.New("--key (or INVOICED_KEY) is required")
	case c.offline && c.sales < 0:
		return c, errors.New("--sales must not be negative")
	case c.untilTotal < 0 || (c.untilTotal > 0 && !c.offline):
		return c, errors.New("--until-total takes a positive N, with --offline")
	case c.cancelEvery < 0 || (c.cancelEvery > 0 && !c.offline):
		return c, errors.New("--cancel-every takes a positive N, with --offline")
	case !c.offline && (c.sales < 1 || c.terms < 1):
		return c, errors.New("--sales and --terminals must be at least 1")
	}
	if series == "" {
		// Online terminals share CH1; a till numbering offline needs a
		// series of its own (while leased, nobody else numbers in it).
		series = "CH1"
		if c.offline {
			series = "T01"
		}
	}
	for s := range strings.SplitSeq(series, ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.series = append(c.series, s)
		}
	}
	if len(c.series) == 0 {
		return c, errors.New("--series names no series")
	}
	if c.runID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		c.runID = hex.EncodeToString(b[:])
	}
	return c, nil
}

// run makes the sales and prints each; it fails when a sale did not learn
// its number (a refusal, or outcome unknown at --sale-timeout).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	if cfg.offline {
		return runOffline(ctx, cfg, stdout, stderr)
	}
	c := client.New(cfg.url, cfg.key, client.WithBackoff(50*time.Millisecond, cfg.maxBackoff))
	var (
		mu                        sync.Mutex // stdout
		numbered, replayed, fails atomic.Int64
		wg                        sync.WaitGroup
	)
	start := time.Now()
	for t := range cfg.terms {
		wg.Go(func() {
			code := cfg.series[t%len(cfg.series)]
			for i := t; i < cfg.sales; i += cfg.terms {
				if i > t && cfg.think > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(cfg.think):
					}
				}
				s := sell(ctx, c, cfg, t, i, code)
				switch {
				case s.Error != "":
					fails.Add(1)
				case s.Replayed:
					replayed.Add(1)
					numbered.Add(1)
				default:
					numbered.Add(1)
				}
				mu.Lock()
				switch {
				case cfg.json:
					b, _ := json.Marshal(s)
					fmt.Fprintf(stdout, "%s\n", b)
				case s.Error != "":
					fmt.Fprintf(stdout, "terminal %d sale %d: %s (key %s)\n", s.Terminal, s.Sale, s.Error, s.Key)
				default:
					fmt.Fprintf(stdout, "terminal %d sale %d: %s (%s)\n", s.Terminal, s.Sale, s.Number, s.ID)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	fmt.Fprintf(stderr, "pos: %d sales from %d terminals in %v: %d numbered (%d learnt from a replay), %d failed\n",
		cfg.sales, cfg.terms, time.Since(start).Round(time.Millisecond), numbered.Load(), replayed.Load(), fails.Load())
	if n := fails.Load(); n > 0 {
		return fmt.Errorf("%d of %d sales did not learn their number", n, cfg.sales)
	}
	return nil
}

// sell issues sale i of terminal t in series code, retrying (inside the
// client) until it learns its number or --sale-timeout passes.
func sell(ctx context.Context, c *client.Client, cfg config, t, i int, code string) sale {
	s := sale{Terminal: t, Sale: i, Series: code, Key: fmt.Sprintf("pos-%s-%d", cfg.runID, i)}
	ctx, cancel := context.WithTimeout(ctx, cfg.saleTimeout)
	defer cancel()
	inv, err := c.IssueInvoice(ctx, code, client.IssueRequest{Items: []client.ItemInput{{
		Description: fmt.Sprintf("Masala chai (terminal %d, sale %d)", t, i),
		HSN:         "0902", Quantity: "2", UnitPrice: "10.00", GSTRate: "5",
	}}}, client.IdempotencyKey(s.Key))
	if err != nil {
		s.Error, s.Unknown = err.Error(), client.IsOutcomeUnknown(err)
		return s
	}
	s.ID, s.Number, s.Serial, s.Replayed = inv.ID, inv.Number, inv.Serial, inv.Replayed
	return s
}
