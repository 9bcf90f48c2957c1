package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// ErrNotContiguous is returned (wrapped) by Run when some series' serials
// were not exactly 1..N with N the acknowledged count.
var ErrNotContiguous = errors.New("bench: numbering check failed")

// Result is one measurement: one design at one concurrency and series
// count.
type Result struct {
	// Design names what was measured: "invoiced",
	// "pgbench interactive", ….
	Design string `json:"design"`
	// Kind is "invoiced" or "pgbench".
	Kind  string `json:"kind"`
	Label string `json:"label"`
	// Series is how many series the load was spread over, in all.
	Series int `json:"series"`
	// Sellers is how many sellers those series belong to (--sellers),
	// when more than one.
	Sellers     int     `json:"sellers,omitempty"`
	Concurrency int     `json:"concurrency"`
	DBLatencyMS float64 `json:"db_latency_ms"`
	Seconds     float64 `json:"seconds"`
	// PerSecond is invoices acknowledged per second (pgbench: tps without
	// connection time).
	PerSecond float64 `json:"invoices_per_s"`
	OK        int64   `json:"ok"`
	// Errors counts failures by HTTP status or "transport".
	Errors  map[string]int64  `json:"errors,omitempty"`
	Samples map[string]string `json:"error_samples,omitempty"`
	// Resolved counts requests with a transport error settled afterwards by
	// replaying their Idempotency-Key.
	Resolved int64   `json:"resolved,omitempty"`
	Latency  Latency `json:"latency"`
	// MeanBatch and MaxBatch come from the server's GET /debug/stats, when
	// it has one.
	MeanBatch float64 `json:"mean_batch,omitempty"`
	// Runs holds invoices/s of every repetition when --repeat > 1; the
	// rest of the Result is the median run's.
	Runs     []float64 `json:"runs,omitempty"`
	MaxBatch int64     `json:"max_batch,omitempty"`
	// Predicted and Mispredicted are the server's transactions committed
	// from predicted counter states and those whose prediction failed,
	// during the measurement (GET /debug/stats).
	Predicted    int64 `json:"predicted,omitempty"`
	Mispredicted int64 `json:"mispredicted,omitempty"`
	// CPU is processor time per invoice by process (invoiced; for the
	// pgbench baselines only on Citus, PostgreSQL's by node).
	CPU CPU `json:"cpu"`
	// GapFree says whether the design claims gap-free numbering; Checked
	// whether its contiguity was verified and Problem what was wrong ("" =
	// contiguous).
	GapFree bool   `json:"gap_free"`
	Checked bool   `json:"checked"`
	Problem string `json:"problem,omitempty"`
	// AbortedClients and Failed are pgbench's aborted clients and failed
	// transactions.
	AbortedClients int    `json:"aborted_clients,omitempty"`
	Failed         int64  `json:"failed,omitempty"`
	Note           string `json:"note,omitempty"`
}

// Report is everything one Run measured.
type Report struct {
	Started   time.Time `json:"started"`
	Command   string    `json:"command"`
	Host      string    `json:"host"`
	Postgres  string    `json:"postgres,omitempty"`
	Pgbench   string    `json:"pgbench,omitempty"`
	DBLatency string    `json:"db_latency"`
	Duration  string    `json:"duration"`
	Notes     []string  `json:"notes,omitempty"`
	Results   []Result  `json:"results"`
	Out       string    `json:"-"`
}

// Run measures what cfg asks for, printing progress to stderr and the
// result table to stdout, and writes results.json and chart.svg to the
// output folder. It returns the report, and an error wrapping
// ErrNotContiguous when any contiguity check failed (after writing
// everything), or the first error that stopped the run.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	if cfg.URL == "" && cfg.DatabaseURL == "" {
		return Report{}, errors.New("bench: spawning servers needs DATABASE_URL (or --database-url), or give --url and --key")
	}
	rep := Report{
		Started:   time.Now(),
		Host:      fmt.Sprintf("%s/%s, %d CPUs, GOMAXPROCS %d", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0)),
		DBLatency: cfg.DBLatency.String(),
		Duration:  cfg.Duration.String(),
		Command:   strings.Join(os.Args, " "),
	}
	rep.Out = cfg.Out
	if rep.Out == "" {
		rep.Out = filepath.Join("bench-results", rep.Started.Format("20060102-150405"))
	}
	if err := os.MkdirAll(rep.Out, 0o755); err != nil {
		return rep, err
	}
	var cl *citusCluster // the Citus cluster, nil on plain PostgreSQL
	if cfg.DatabaseURL != "" {
		rep.Postgres = pgVersion(ctx, cfg.DatabaseURL)
		var err error
		if cl, err = findCitus(ctx, cfg.DatabaseURL); err != nil {
			return rep, err
		}
	}

	// The database URL clients use: through the proxy when latency is
	// injected.
	clientDB := cfg.DatabaseURL
	if cfg.DBLatency > 0 {
		if cfg.DatabaseURL == "" {
			return rep, errors.New("bench: --db-latency needs DATABASE_URL")
		}
		p, proxied, err := startProxy(cfg.DatabaseURL, cfg.DBLatency/2)
		if err != nil {
			return rep, err
		}
		defer p.Close()
		clientDB = proxied
		fmt.Fprintf(stderr, "bench: latency proxy %s → PostgreSQL, %v each way\n", p.Addr(), cfg.DBLatency/2)
		if cfg.URL != "" {
			rep.Notes = append(rep.Notes, "--db-latency with --url: only pgbench goes through the proxy; the running server talks to its own database directly")
		}
	}

	tag := runTag()
	run := 0
	var failed []string
	record := func(r Result) {
		rep.Results = append(rep.Results, r)
		if r.Checked && r.Problem != "" {
			failed = append(failed, r.Design+": "+r.Problem)
			fmt.Fprintf(stderr, "bench: NUMBERING CHECK FAILED: %s S=%d C=%d: %s\n", r.Design, r.Series, r.Concurrency, r.Problem)
		}
	}

	// Our server(s).
	type target struct {
		design string
		flags  []string
	}
	var targets []target
	if cfg.URL != "" {
		targets = []target{{design: "invoiced"}}
	} else {
		iv := invoiced{bin: cfg.Spawn, dbURL: cfg.DatabaseURL}
		targets = append(targets, target{"invoiced", []string{"--stats"}})
		if cfg.CompareBatching {
			if iv.hasClassicMode(ctx) {
				targets = append(targets, target{"invoiced batching=false", []string{"--batching=false", "--stats"}})
			} else {
				rep.Notes = append(rep.Notes, cfg.Spawn+" serve has no classic mode (one transaction per invoice): the pgbench baseline interactive is that design")
			}
		}
	}
	keys := []string{cfg.Key}
	if cfg.URL == "" {
		gstins, err := cfg.SellerGSTINs()
		if err != nil {
			return rep, err
		}
		if len(gstins) > 1 {
			fmt.Fprintf(stderr, "bench: preparing %d sellers (%s … %s)\n", len(gstins), gstins[0], gstins[len(gstins)-1])
		}
		keys, err = invoiced{bin: cfg.Spawn, dbURL: cfg.DatabaseURL}.prepare(ctx, gstins)
		if err != nil {
			return rep, err
		}
	}
	for _, t := range targets {
		base := cfg.URL
		var srv *server
		if cfg.URL == "" {
			var err error
			iv := invoiced{bin: cfg.Spawn, dbURL: clientDB}
			flags := append(append([]string(nil), t.flags...), cfg.ServeFlags...)
			if cfg.Webhook {
				flags = append(flags, "--webhook-allow-private")
			}
			srv, err = iv.startServer(ctx, flags, filepath.Join(rep.Out, "server.log"))
			if err != nil {
				return rep, err
			}
			base = srv.url
			fmt.Fprintf(stderr, "bench: started %s at %s\n", t.design, base)
		}
		type point struct {
			nseries, c int
			v          variant
		}
		runs := map[point][]Result{}
		variants := []variant{{}}
		if cfg.Batch > 0 {
			variants = append(variants, variant{batch: cfg.Batch})
		}
		if cfg.Webhook {
			variants = append(variants, variant{webhook: true})
		}
		for range max(1, cfg.Repeat) {
			for _, nseries := range cfg.Phases {
				for _, c := range cfg.Concurrency {
					for _, v := range variants {
						if ctx.Err() != nil {
							break
						}
						run++
						r, err := measureInvoiced(ctx, cfg, base, keys, t.design, tag, run, nseries, c, v, srv.pid(), cl, stderr)
						if err != nil {
							if srv != nil {
								_ = srv.stop() // err, the measurement's, is the one to report
							}
							return rep, err
						}
						if r.Checked && r.Problem != "" {
							record(r) // a failed check is reported whatever the median
						}
						runs[point{nseries, c, v}] = append(runs[point{nseries, c, v}], r)
					}
				}
			}
		}
		for _, v := range variants {
			for _, nseries := range cfg.Phases {
				for _, c := range cfg.Concurrency {
					if rs := runs[point{nseries, c, v}]; len(rs) > 0 {
						record(median(rs))
					}
				}
			}
		}
		if srv != nil {
			if err := srv.stop(); err != nil {
				fmt.Fprintf(stderr, "bench: %s: %v\n", t.design, err)
			}
		}
	}

	if cfg.Repeat > 1 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("invoiced figures are the median of %d runs per point (phases interleaved); every run's invoices/s is in results.json (runs)", cfg.Repeat))
	}

	// The pgbench baselines.
	if len(cfg.Baselines) > 0 && cfg.DatabaseURL == "" {
		rep.Notes = append(rep.Notes, "pgbench baselines skipped: no DATABASE_URL")
	} else if len(cfg.Baselines) > 0 {
		bin, err := findPgbench(cfg.Pgbench)
		if err != nil {
			rep.Notes = append(rep.Notes, "pgbench baselines skipped: "+err.Error())
			fmt.Fprintf(stderr, "bench: %v\n", err)
		} else {
			rep.Pgbench = bin
			if cl != nil {
				rep.Notes = append(rep.Notes, cl.note(max(1, cfg.Sellers)))
			}
			for _, name := range cfg.Baselines {
				b, _ := baselineByName(name)
				if cl != nil && !b.onCitus {
					rep.Notes = append(rep.Notes, fmt.Sprintf("pgbench %s skipped: it has no form distributed by seller for Citus", b.name))
					continue
				}
				for _, nseries := range cfg.Phases {
					for _, c := range cfg.Concurrency {
						if ctx.Err() != nil {
							break
						}
						r, err := measureBaseline(ctx, cfg, bin, clientDB, b, nseries*max(1, cfg.Sellers), c, cl, stderr) // as many series as ours, in all
						if err != nil {
							return rep, err
						}
						record(r)
					}
				}
			}
		}
	}

	if err := ctx.Err(); err != nil {
		rep.Notes = append(rep.Notes, "interrupted: "+err.Error())
	}
	writeTable(stdout, rep)
	if err := writeOutputs(rep); err != nil {
		return rep, err
	}
	fmt.Fprintf(stdout, "\nresults: %s\nchart:   %s\n", filepath.Join(rep.Out, "results.json"), filepath.Join(rep.Out, "chart.svg"))
	if len(failed) > 0 {
		return rep, fmt.Errorf("%w:\n  %s", ErrNotContiguous, strings.Join(failed, "\n  "))
	}
	return rep, ctx.Err()
}
