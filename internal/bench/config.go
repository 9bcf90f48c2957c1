package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Config is what one benchmark run measures. ParseFlags fills it from the
// command line; the zero value is not usable (use ParseFlags(nil) for the
// defaults).
type Config struct {
	// URL and Key target a running server (both required together). When
	// URL is empty the harness starts servers itself from Spawn.
	URL, Key string
	// Spawn is the invoiced binary the harness runs (migrate, sellers add,
	// keys add, serve) when URL is empty.
	Spawn string
	// CompareBatching also measures the spawned server with
	// --batching=false, when its serve still has that classic mode (a
	// binary before the Committer's single strategy); otherwise a note
	// points to the pgbench baseline interactive.
	CompareBatching bool
	// ServeFlags are extra flags for `invoiced serve`, e.g. --max-conns 64.
	ServeFlags []string
	// DatabaseURL is the PostgreSQL the spawned servers and pgbench use and
	// the contiguity check reads. Empty means: no database access (only
	// possible with URL; the check then uses the API). The CLI fills it from
	// DATABASE_URL when --database-url is not given.
	DatabaseURL string
	// Duration is how long each measurement runs.
	Duration time.Duration
	// Concurrency lists the client counts to sweep.
	Concurrency []int
	// Phases lists the numbers of series to spread the load over, per
	// seller when Sellers > 1.
	Phases []int
	// Sellers, when above 1, spreads the load over that many sellers of
	// spawned servers, each with its own GSTIN (SellerGSTINs), API key and
	// Phases[i] series; every request picks one series of one seller
	// uniformly at random and authenticates as its seller. 0 or 1 is the
	// one seller GSTIN.
	Sellers int
	// DBLatency is the round trip the latency proxy adds between every
	// database client (server and pgbench) and PostgreSQL; 0 disables it.
	DBLatency time.Duration
	// Baselines names the pgbench baselines to run (see BaselineNames);
	// empty runs none.
	Baselines []string
	// Pgbench is the pgbench binary; empty finds it.
	Pgbench string
	// Out is the folder results.json and chart.svg are written to; empty
	// means bench-results/<timestamp>.
	Out string
	// GSTIN is the seller the spawned runs issue for (created if missing).
	GSTIN string
	// Repeat measures each of our (phase, clients) points this many times,
	// phases interleaved, and reports the median run (by invoices/s); the
	// others are kept in Result.Runs. 0 or 1 measures once.
	Repeat int
	// Batch, when positive, also measures every point through the batch
	// route (POST /v1/series/{code}/invoices/batch) with this many
	// invoices per request, beside the single-invoice route.
	Batch int
	// Webhook also measures every point with a webhook registered for the
	// seller (deliveries to a receiver the harness runs on 127.0.0.1), so
	// the outbox's cost shows beside the same point without. The server
	// needs --webhook-allow-private (added to spawned ones).
	Webhook bool
}

// usage is printed for -h.
const usage = `Usage: invoiced bench [FLAGS]

Drives POST /v1/series/{code}/invoices with C concurrent keep-alive clients
for T seconds on 1 series, then on 64 (with --batch N, each point is measured
again through POST /v1/series/{code}/invoices/batch, N invoices a request);
checks every series' serials are contiguous and equal to the acknowledged
count; runs the pgbench baselines against the same PostgreSQL with the same
client count; prints a table, writes results.json and chart.svg. Without --url
it starts bin/invoiced itself (DATABASE_URL required).

With --sellers N the load is spread over N sellers, each with its own GSTIN
(valid, in the state of --gstin), API key and series: --series then counts
series per seller (default 1), every request picks one series of one seller at
random, and the numbering is checked per series as always. On a Citus
coordinator the sellers' shard groups lie on every worker, the pgbench
baselines run on tables distributed by seller, and PostgreSQL's CPU is split
into coordinator and workers:
  scripts/citus run -- bin/invoiced bench --sellers 64 --baselines interactive,onestatement
  scripts/bench --citus-compare    # the same on plain PostgreSQL and on Citus

Flags:
`

// ParseFlags parses the `invoiced bench` flags in args (without the
// subcommand name). It returns flag.ErrHelp after printing the usage for -h,
// and an error naming the flag for anything malformed.
func ParseFlags(args []string) (Config, error) {
	return parseFlags(args, io.Discard)
}

// ParseFlagsOutput is ParseFlags, writing the usage and flag errors to w.
func ParseFlagsOutput(args []string, w io.Writer) (Config, error) {
	return parseFlags(args, w)
}

func parseFlags(args []string, w io.Writer) (Config, error) {
	c := Config{}
	fs := flag.NewFlagSet("invoiced bench", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprint(w, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.URL, "url", "", "base URL of a running server, e.g. http://127.0.0.1:8080 (needs --key)")
	fs.StringVar(&c.Key, "key", "", "API key with scopes issue,read,manage for --url")
	fs.StringVar(&c.Spawn, "spawn", "bin/invoiced", "invoiced binary to start when --url is not given")
	fs.BoolVar(&c.CompareBatching, "compare-batching", false, "also measure the spawned server with --batching=false (binaries that still have the classic mode; otherwise the pgbench baseline interactive is that design)")
	serveFlags := fs.String("serve-flags", "", "extra flags for the spawned `invoiced serve`, space-separated")
	fs.StringVar(&c.DatabaseURL, "database-url", "", "PostgreSQL URL (default $DATABASE_URL)")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "length of each measurement")
	conc := fs.String("concurrency", "64", "comma-separated client counts to sweep, e.g. 1,4,16,64")
	phases := fs.String("series", "1,64", "comma-separated series counts (phases); per seller with --sellers, where the default is 1")
	fs.IntVar(&c.Sellers, "sellers", 1, "spread the load over N sellers of spawned servers, each with its own GSTIN, API key and series (1-999; on Citus their shard groups spread over the workers)")
	fs.DurationVar(&c.DBLatency, "db-latency", 0, "round trip added between database clients and PostgreSQL by a proxy, e.g. 5ms")
	baselines := fs.String("baselines", "all", "pgbench baselines: all, none, or a comma-separated list of "+strings.Join(BaselineNames(), ","))
	fs.StringVar(&c.Pgbench, "pgbench", "", "pgbench binary (default: PATH, pg_config --bindir, /usr/lib/postgresql/*/bin)")
	fs.StringVar(&c.Out, "out", "", "results folder (default bench-results/<timestamp>)")
	fs.IntVar(&c.Batch, "batch", 0, "also measure each point through the batch route with N invoices per request (1-500; 0: single invoices only)")
	fs.BoolVar(&c.Webhook, "webhook", false, "also measure each point with a webhook registered (the outbox's cost); a --url server needs --webhook-allow-private")
	fs.IntVar(&c.Repeat, "repeat", 1, "measure each of our points N times (phases interleaved) and report the median run")
	fs.StringVar(&c.GSTIN, "gstin", "24AAQCA8719H1ZC", "seller GSTIN for spawned runs (created if missing; not the make run demo seller, so benchmarks leave its books alone)")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("bench: unexpected argument %q", fs.Arg(0))
	}
	var err error
	if c.Concurrency, err = parseInts(*conc); err != nil {
		return Config{}, fmt.Errorf("bench: --concurrency: %w", err)
	}
	seriesSet := false
	fs.Visit(func(f *flag.Flag) { seriesSet = seriesSet || f.Name == "series" })
	if c.Sellers > 1 && !seriesSet {
		*phases = "1"
	}
	if c.Phases, err = parseInts(*phases); err != nil {
		return Config{}, fmt.Errorf("bench: --series: %w", err)
	}
	if c.Baselines, err = parseBaselines(*baselines); err != nil {
		return Config{}, fmt.Errorf("bench: --baselines: %w", err)
	}
	c.ServeFlags = strings.Fields(*serveFlags)
	return c, c.Validate()
}

// Validate reports the first inconsistency in c.
func (c Config) Validate() error {
	switch {
	case (c.URL == "") != (c.Key == ""):
		return errors.New("bench: --url and --key go together")
	case c.URL == "" && c.Spawn == "":
		return errors.New("bench: give --url and --key, or --spawn BIN")
	case c.Duration <= 0:
		return errors.New("bench: --duration must be positive")
	case len(c.Concurrency) == 0:
		return errors.New("bench: --concurrency needs at least one client count")
	case len(c.Phases) == 0:
		return errors.New("bench: --series needs at least one series count")
	case c.DBLatency < 0:
		return errors.New("bench: --db-latency must not be negative")
	case c.Repeat < 0 || c.Repeat > 25:
		return errors.New("bench: --repeat must be 1 to 25")
	case c.Batch < 0 || c.Batch > 500:
		return errors.New("bench: --batch must be 0 to 500")
	case c.URL != "" && c.CompareBatching:
		return errors.New("bench: --compare-batching needs spawned servers (no --url)")
	case c.Sellers < 0 || c.Sellers > 999:
		return errors.New("bench: --sellers must be 1 to 999")
	case c.Sellers > 1 && c.URL != "":
		return errors.New("bench: --sellers needs spawned servers (no --url): a key belongs to one seller")
	case c.Sellers > 1 && c.Webhook:
		return errors.New("bench: --webhook measures one seller; it does not combine with --sellers")
	}
	for _, p := range c.Phases {
		if p*max(1, c.Sellers) > 999 {
			return errors.New("bench: --series: at most 999 series in all (--series × --sellers)")
		}
	}
	return nil
}

// parseInts parses a comma-separated list of positive integers.
func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseBaselines expands "all" and "none" and checks every name.
func parseBaselines(s string) ([]string, error) {
	switch strings.TrimSpace(s) {
	case "all", "":
		return BaselineNames(), nil
	case "none":
		return nil, nil
	}
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if _, ok := baselineByName(f); !ok {
			return nil, fmt.Errorf("unknown baseline %q (have %s)", f, strings.Join(BaselineNames(), ", "))
		}
		out = append(out, f)
	}
	return out, nil
}
