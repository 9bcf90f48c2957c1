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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/internal/latencyproxy"
)

// This file holds one measurement: of invoiced (measureInvoiced) or of a
// pgbench baseline (measureBaseline), and the helpers they share.

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
	// B + 2-char run tag + 2-char run index + "-" + i: at most 8
	// characters up to 99 series, leaving room for 7+ digits of unpadded
	// {SEQ}; unique over the sellers, so the checks can go by code. The
	// sellers are the same in every run on one database, and two random
	// characters meet an earlier run's now and then: then another tag.
	// The series a failed attempt created stay, unused; the checks go by
	// the codes of the attempt that succeeded.
	for attempt := 1; ; attempt++ {
		err := createSeries(ctx, codes, via, views, nseries, tag, run)
		if err == nil {
			break
		}
		if !errors.Is(err, errSeriesTaken) || attempt == 5 {
			return Result{}, err
		}
		tag = runTag()
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
		run.nsellers, run.script = max(1, cfg.Sellers), "citus/"+b.script
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

// createSeries names the series of one measurement for tag and run, each
// owned by the seller whose view creates it (seller j owns series
// j*nseries … (j+1)*nseries-1), and creates them. It fails with
// errSeriesTaken when a seller already has one of the codes, or as the
// server does.
func createSeries(ctx context.Context, codes []string, via, views []*apiClient, nseries int, tag string, run int) error {
	for i := range codes {
		codes[i] = fmt.Sprintf("B%s%s-%d", tag, base36(run, 2), i+1)
		via[i] = views[i/nseries]
		if err := via[i].createSeries(ctx, codes[i]); err != nil {
			return err
		}
	}
	return nil
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
