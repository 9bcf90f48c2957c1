// Package bench is the measuring harness behind `invoiced bench` and
// `make bench` (docs/bench.md).
//
// It drives the real HTTP API (POST /v1/series/{code}/invoices) with C
// concurrent keep-alive clients for a fixed time on 1 series and then on
// 64, each request with its own Idempotency-Key, and records every
// latency. After each measurement it settles requests that ended in a
// transport error by replaying their Idempotency-Key, then checks that each
// series' serials are exactly 1..N with N the number of 201 answers (from
// the answers themselves, from GET /v1/series, and, given a database, from
// the invoices and series_counters tables); a violation makes Run fail with
// ErrNotContiguous.
//
// In the same run it measures the single-invoice-per-transaction designs
// with pgbench against the same PostgreSQL and client count (scripts in
// pgbench/, on their own schema "bench"), optionally all through a
// latency-injecting proxy (internal/latencyproxy), and writes a table,
// results.json and chart.svg.
//
// The CLI is a thin wrapper:
//
//	cfg, err := bench.ParseFlagsOutput(args, stderr)
//	if cfg.DatabaseURL == "" { cfg.DatabaseURL = getenv("DATABASE_URL") }
//	_, err = bench.Run(ctx, cfg, stdout, stderr)
package bench
