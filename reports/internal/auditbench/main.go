// Command auditbench seeds large databases and measures the serial audit
// on a large series. It is a tool for docs/reports.md and
// docs/operations.md, not part of make test.
//
//	auditbench -seed 1000000               # DATABASE_URL: seller 27AAPFU0939F1ZV, series BENCH, FY 2026-27, real hashes
//	auditbench -audit -format csv -out /dev/null
//	auditbench -verify
//	auditbench -deep -deep-sellers 10 -deep-series 10 -deep-years 10 -deep-per 10000 -jobs 2
//	                                       # a database years deep: 1,000 series-years, 10,000,000 invoices
//	auditbench -public-ids 1000000 -public-ids-issue 100000
//	                                       # the unique index of legacy and routed public ids, in scratch tables
//
// Measured modes print elapsed time and the peak Go heap in use (sampled
// every 10 ms); run them under /usr/bin/time -v for the peak RSS.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/sellers"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
	"io"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"sync/atomic"
	"time"
)

const gstin = "27AAPFU0939F1ZV"

func main() {
	if err := run(); errors.Is(err, errUsage) {
		os.Exit(2)
	} else if err != nil {
		log.Fatal(err)
	}
}

// errUsage: the flags asked for nothing; the usage was printed.
var errUsage = errors.New("usage")

// run parses the flags and does what they ask; it returns the first error.
func run() error {
	seed := flag.Int("seed", 0, "insert this many invoices into series BENCH (FY 2026-27)")
	deep := flag.Bool("deep", false, "seed a database years deep (see -deep-*)")
	var l deepLayout
	flag.IntVar(&l.sellers, "deep-sellers", 10, "sellers")
	flag.IntVar(&l.seriesPer, "deep-series", 10, "series per seller")
	flag.IntVar(&l.years, "deep-years", 10, "financial years per series, ending with 2026-27")
	flag.IntVar(&l.per, "deep-per", 10000, "invoices per series-year")
	flag.IntVar(&l.jobs, "jobs", 2, "series-years seeded at once")
	audit := flag.Bool("audit", false, "write the audit of BENCH 2026-27")
	verify := flag.Bool("verify", false, "verify BENCH 2026-27")
	format := flag.String("format", "csv", "audit format")
	out := flag.String("out", "/dev/null", "audit output")
	memprofile := flag.String("memprofile", "", "write a heap profile here after the measured run")
	publicIDs := flag.Int("public-ids", 0, "load this many public ids of each form into scratch tables pubid_legacy and pubid_routed, then measure issuing more")
	publicIDsIssue := flag.Int("public-ids-issue", 100000, "with -public-ids: ids inserted, 100 a transaction, in the measured phase")
	publicIDsSellers := flag.Int("public-ids-sellers", 1000, "with -public-ids: sellers the ids belong to, in turn")
	flag.Parse()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer pool.Close()
	switch {
	case *deep:
		start := time.Now()
		if err := seedDeep(ctx, pool, l, func(s string) { fmt.Printf("%s (%s)\n", s, time.Since(start).Round(time.Second)) }); err != nil {
			return err
		}
		fmt.Printf("seeded %d invoices over %d series-years in %s\n", l.sellers*l.seriesPer*l.years*l.per, l.sellers*l.seriesPer*l.years, time.Since(start).Round(time.Millisecond))
	case *publicIDs > 0:
		if err := measurePublicIDs(ctx, pool, *publicIDs, *publicIDsIssue, *publicIDsSellers, os.Stdout); err != nil {
			return err
		}
	case *seed > 0:
		start := time.Now()
		if err := seedSeries(ctx, pool, *seed); err != nil {
			return err
		}
		fmt.Printf("seeded %d invoices in %s\n", *seed, time.Since(start).Round(time.Millisecond))
	case *audit, *verify:
		seller, err := sellers.ByGSTIN(ctx, pool, gstin)
		if err != nil {
			return err
		}
		s, err := series.Get(ctx, pool, seller.ID, "BENCH")
		if err != nil {
			return err
		}
		var peak atomic.Uint64
		stop := make(chan struct{})
		go func() {
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
		start := time.Now()
		what := "verify"
		if *audit {
			what = "audit " + *format
			f, err := os.Create(*out)
			if err != nil {
				return err
			}
			cw := &countWriter{w: f}
			if err := reports.WriteAudit(ctx, pool, seller, s, 2026, *format, cw); err != nil {
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			what += fmt.Sprintf(" (%d bytes)", cw.n)
		} else {
			rep, err := reports.Verify(ctx, pool, seller, "BENCH", 2026)
			if err != nil {
				return err
			}
			what += fmt.Sprintf(" (%d invoices, %d records, ok=%v)", rep.Chains[0].Invoices, rep.Chains[0].Records, rep.OK())
		}
		el := time.Since(start)
		close(stop)
		if *memprofile != "" {
			f, err := os.Create(*memprofile)
			if err != nil {
				return err
			}
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
		fmt.Printf("%s: %s, peak heap in use %.1f MiB\n", what, el.Round(time.Millisecond), float64(peak.Load())/(1<<20))
	default:
		flag.Usage()
		return errUsage
	}
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
