package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/internal/latencyproxy"
)

// ErrNotContiguous is returned (wrapped) by Run when some series' serials
// were not exactly 1..N with N the acknowledged count.
var ErrNotContiguous = errors.New("bench: numbering check failed")

// Result is one measurement: one design at one concurrency and series
// count.
type Result struct {
	// Design names what was measured: "invoiced batching=true",
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
		if iv.supportsBatching(ctx) {
			targets = append(targets, target{"invoiced batching=true", []string{"--batching=true", "--stats"}})
			if cfg.CompareBatching {
				targets = append(targets, target{"invoiced batching=false", []string{"--batching=false", "--stats"}})
			}
		} else {
			targets = append(targets, target{design: "invoiced"})
			if cfg.CompareBatching {
				rep.Notes = append(rep.Notes, cfg.Spawn+" serve has no --batching flag: measured its default only")
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
				if cl != nil && b.citus == "" {
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

// variant is how one measurement drives the server: batch > 0 sends
// every request to the batch route with batch invoices (design
// "<design> batch=N"); webhook registers a webhook for the seller first,
// delivered to a receiver of the harness, and deletes it after (design
// "<design> webhook").
type variant struct {
	batch   int
	webhook bool
}

// measureInvoiced creates nseries fresh series for each seller (one API
// key each, keys) on the server at base and drives them with c clients for
// cfg.Duration as v says, then checks contiguity. On a Citus cluster (cl
// not nil) PostgreSQL's CPU is split by node.
func measureInvoiced(ctx context.Context, cfg Config, base string, keys []string, design, tag string, run, nseries, c int, v variant, serverPID int, cl *citusCluster, stderr io.Writer) (Result, error) {
	batch := v.batch
	if batch > 0 {
		design = fmt.Sprintf("%s batch=%d", design, batch)
	}
	if v.webhook {
		design += " webhook"
		stop, err := registerWebhook(ctx, newAPIClient(base, keys[0], 1))
		if err != nil {
			return Result{}, err
		}
		defer stop()
	}
	a := newAPIClient(base, keys[0], c)
	defer a.close()
	// Seller j owns series j*nseries … (j+1)*nseries-1, through its key.
	views := make([]*apiClient, len(keys))
	codes := make([]string, nseries*len(keys))
	via := make([]*apiClient, len(codes))
	for j, k := range keys {
		views[j] = a.as(k)
	}
	for i := range codes {
		// B + 2-char run tag + 2-char run index + "-" + i: at most 8
		// characters up to 99 series, leaving room for 7+ digits of
		// unpadded {SEQ}; unique over the sellers, so the checks can go by
		// code.
		codes[i] = fmt.Sprintf("B%s%s-%d", tag, base36(run, 2), i+1)
		via[i] = views[i/nseries]
		if err := via[i].createSeries(ctx, codes[i]); err != nil {
			return Result{}, err
		}
	}
	sellers := 0
	label := fmt.Sprintf("%s S=%d C=%d", design, len(codes), c)
	if len(keys) > 1 {
		sellers = len(keys)
		label = fmt.Sprintf("%s S=%d sellers=%d C=%d", design, len(codes), sellers, c)
	}
	fmt.Fprintf(stderr, "bench: %s, %v\n", label, cfg.Duration)
	before := a.stats(ctx)
	cpu0 := sampleCPU(serverPID)
	lr := runLoad(ctx, a, loadSpec{
		label: label, clients: c, duration: cfg.Duration, codes: codes, via: via,
		keyTag: "bench-" + tag + base36(run, 2), batch: batch,
	}, stderr)
	cpu1 := sampleCPU(serverPID)
	after := a.stats(context.WithoutCancel(ctx))
	r := Result{
		Design: design, Kind: "invoiced", Label: design, Series: len(codes), Sellers: sellers, Concurrency: c,
		DBLatencyMS: float64(cfg.DBLatency) / float64(time.Millisecond),
		Seconds:     lr.Elapsed.Seconds(), OK: lr.OK, Errors: lr.Errors, Samples: lr.Sample,
		PerSecond: float64(lr.OK) / lr.Elapsed.Seconds(),
		Latency:   summarize(lr.Lat),
		GapFree:   true,
		CPU:       cpuBetween(cpu0, cpu1, lr.OK, cl),
	}
	if len(r.Errors) == 0 {
		r.Errors, r.Samples = nil, nil
	}
	if before != nil && after != nil && after.Batches > before.Batches {
		r.MeanBatch = float64(after.Invoices-before.Invoices) / float64(after.Batches-before.Batches)
		r.MaxBatch = after.MaxBatch
		r.Predicted, r.Mispredicted = after.Predicted-before.Predicted, after.Mispredicted-before.Mispredicted
	}
	checkCtx := context.WithoutCancel(ctx)
	if err := lr.resolve(checkCtx, a); err != nil {
		r.Checked, r.Problem = true, "could not settle an ambiguous request: "+err.Error()
		return r, nil
	}
	r.Resolved = lr.Resolved
	problem, err := checkInvoiced(checkCtx, views, cfg.DatabaseURL, codes, lr.Acked)
	if err != nil {
		return r, fmt.Errorf("bench: contiguity check: %w", err)
	}
	r.Checked, r.Problem = true, problem
	fmt.Fprintf(stderr, "bench: %s: %.0f invoices/s, p99 %.2fms, contiguity %s\n", label, r.PerSecond, r.Latency.P99, okOr(problem))
	return r, nil
}

// measureBaseline resets the bench schema, runs baseline b with pgbench
// through clientDB, and checks contiguity when b claims to be gap-free. On
// a Citus coordinator (cl not nil) it runs b's form on tables distributed
// by seller, cfg.Sellers of them, and measures PostgreSQL's CPU per
// invoice, by node.
func measureBaseline(ctx context.Context, cfg Config, bin, clientDB string, b baseline, nseries, c int, cl *citusCluster, stderr io.Writer) (Result, error) {
	run := pgbenchRun{bin: bin, dbURL: clientDB, clients: c, nseries: nseries, duration: cfg.Duration, script: b.script}
	if cl != nil {
		run.nsellers, run.script = max(1, cfg.Sellers), "citus/"+b.citus
	}
	if err := resetBaseline(ctx, cfg.DatabaseURL, nseries, run.nsellers); err != nil {
		return Result{}, err
	}
	label := fmt.Sprintf("pgbench %s S=%d C=%d", b.name, nseries, c)
	fmt.Fprintf(stderr, "bench: %s, %v\n", label, cfg.Duration)
	var cpu0 cpuSample
	if cl != nil {
		cpu0 = sampleCPU(0)
	}
	pr, lat, err := run.run(ctx)
	if err != nil {
		return Result{}, err
	}
	var cpu CPU
	if cl != nil {
		cpu = cpuBetween(cpu0, sampleCPU(0), pr.Processed, cl)
		cpu.Load = 0 // pgbench, not this process, is the load
	}
	r := Result{
		Design: "pgbench " + b.name, Kind: "pgbench", Label: b.label, Series: nseries, Concurrency: c,
		DBLatencyMS: float64(cfg.DBLatency) / float64(time.Millisecond),
		Seconds:     cfg.Duration.Round(time.Second).Seconds(),
		PerSecond:   pr.TPS, OK: pr.Processed, Failed: pr.Failed, AbortedClients: pr.AbortedClients,
		Latency: summarize(lat), GapFree: b.gapFree, CPU: cpu,
	}
	if pr.AbortedClients > 0 {
		r.Note = fmt.Sprintf("%d of %d clients aborted: %s", pr.AbortedClients, c, pr.AbortReason)
	}
	rows, problem, err := checkBaseline(context.WithoutCancel(ctx), cfg.DatabaseURL, b, cl != nil)
	if err != nil {
		return r, fmt.Errorf("bench: %s check: %w", b.name, err)
	}
	if b.gapFree {
		r.Checked, r.Problem = true, problem
	}
	if rows != pr.Processed {
		// pgbench stops at -T mid-transaction; a committed one it did not
		// count shows up here.
		n := fmt.Sprintf("%d rows in the table, pgbench counted %d transactions", rows, pr.Processed)
		r.Note = strings.TrimPrefix(r.Note+"; "+n, "; ")
	}
	fmt.Fprintf(stderr, "bench: %s: %.0f tps, p99 %.2fms%s\n", label, r.PerSecond, r.Latency.P99, map[bool]string{true: ", " + r.Note, false: ""}[r.Note != ""])
	return r, nil
}

// startProxy starts a latency proxy in front of the host:port of dbURL and
// returns it with dbURL rewritten to go through it.
func startProxy(dbURL string, oneWay time.Duration) (*latencyproxy.Proxy, string, error) {
	u, err := url.Parse(dbURL)
	if err != nil || u.Host == "" {
		return nil, "", fmt.Errorf("bench: --db-latency needs a postgres://host:port/… DATABASE_URL: %v", err)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "5432")
	}
	p, err := latencyproxy.New("127.0.0.1:0", host, oneWay)
	if err != nil {
		return nil, "", err
	}
	u.Host = p.Addr()
	return p, u.String(), nil
}

// runTag returns two random base-36 characters naming this run's series.
func runTag() string {
	var b [2]byte
	rand.Read(b[:])
	return base36(int(b[0])<<8|int(b[1]), 2)
}

// base36 renders n in upper-case base 36, the last width digits, zero
// padded.
func base36(n, width int) string {
	s := strings.ToUpper(strconv.FormatInt(int64(n), 36))
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s[len(s)-width:]
}

// okOr returns "ok" for "" and "FAILED: problem" otherwise.
func okOr(problem string) string {
	if problem == "" {
		return "ok"
	}
	return "FAILED: " + problem
}

// median returns the run with the median invoices/s (the lower middle one
// for an even count), with every run's invoices/s in Runs when there are
// several.
func median(rs []Result) Result {
	sorted := append([]Result(nil), rs...)
	slices.SortFunc(sorted, func(a, b Result) int { return cmp.Compare(a.PerSecond, b.PerSecond) })
	m := sorted[(len(sorted)-1)/2]
	if len(rs) > 1 {
		m.Runs = make([]float64, len(rs))
		for i, r := range rs {
			m.Runs[i] = math.Round(r.PerSecond)
		}
	}
	return m
}
