// Command auditbench measures the serial audit on a large series. It is a
// tool for docs/reports.md, not part of make test.
//
//	auditbench -seed 1000000               # DATABASE_URL: seller 27AAPFU0939F1ZV, series BENCH, FY 2026-27, real hashes
//	auditbench -audit -format csv -out /dev/null
//	auditbench -verify
//
// Measured modes print elapsed time and the peak Go heap in use (sampled
// every 10 ms); run them under /usr/bin/time -v for the peak RSS.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/migrations"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
)

const gstin = "27AAPFU0939F1ZV"

func main() {
	seed := flag.Int("seed", 0, "insert this many invoices into series BENCH (FY 2026-27)")
	audit := flag.Bool("audit", false, "write the audit of BENCH 2026-27")
	verify := flag.Bool("verify", false, "verify BENCH 2026-27")
	format := flag.String("format", "csv", "audit format")
	out := flag.String("out", "/dev/null", "audit output")
	memprofile := flag.String("memprofile", "", "write a heap profile here after the measured run")
	flag.Parse()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	switch {
	case *seed > 0:
		start := time.Now()
		if err := seedSeries(ctx, pool, *seed); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("seeded %d invoices in %s\n", *seed, time.Since(start).Round(time.Millisecond))
	case *audit, *verify:
		seller, err := series.SellerByGSTIN(ctx, pool, gstin)
		if err != nil {
			log.Fatal(err)
		}
		s, err := series.Get(ctx, pool, seller.ID, "BENCH")
		if err != nil {
			log.Fatal(err)
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
				log.Fatal(err)
			}
			cw := &countWriter{w: f}
			if err := reports.WriteAudit(ctx, pool, seller, s, 2026, *format, cw); err != nil {
				log.Fatal(err)
			}
			if err := f.Close(); err != nil {
				log.Fatal(err)
			}
			what += fmt.Sprintf(" (%d bytes)", cw.n)
		} else {
			rep, err := reports.Verify(ctx, pool, seller, "BENCH", 2026)
			if err != nil {
				log.Fatal(err)
			}
			what += fmt.Sprintf(" (%d invoices, %d records, ok=%v)", rep.Chains[0].Invoices, rep.Chains[0].Records, rep.OK())
		}
		el := time.Since(start)
		close(stop)
		if *memprofile != "" {
			f, err := os.Create(*memprofile)
			if err != nil {
				log.Fatal(err)
			}
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
		fmt.Printf("%s: %s, peak heap in use %.1f MiB\n", what, el.Round(time.Millisecond), float64(peak.Load())/(1<<20))
	default:
		flag.Usage()
		os.Exit(2)
	}
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

// seedSeries inserts n invoices of series BENCH dated through FY 2026-27,
// every 100th cancelled, with their chain records hashed as IssueTx and
// CancelTx would, and the matching counter row.
func seedSeries(ctx context.Context, pool *pgxpool.Pool, n int) error {
	if _, err := migrations.Up(ctx, pool); err != nil {
		return err
	}
	seller, err := series.SellerByGSTIN(ctx, pool, gstin)
	if err != nil {
		if seller, err = series.CreateSeller(ctx, pool, gstin, "Bench Co"); err != nil {
			return err
		}
	}
	s, err := series.CreateSeries(ctx, pool, series.NewSeries{SellerID: seller.ID, Code: "BENCH", DocType: "invoice", Format: "B/{FY}/{SEQ:7}"})
	if err != nil {
		return err
	}
	const fy = series.FY(2026)
	base := time.Date(2026, 4, 1, 3, 30, 0, 0, time.UTC)
	type rec struct {
		pos, serial int64
		kind        string
		at          time.Time
		hash        []byte
	}
	var recs []rec
	invRows := make([][]any, 0, n)
	var head []byte
	var pos int64
	var lastDate, lastAt time.Time
	for i := 0; i < n; i++ {
		serial := int64(i + 1)
		date := fy.Start().AddDate(0, 0, i*364/n)
		at := base.Add(time.Duration(i) * 30 * time.Second)
		num, _ := s.Format.Render(fy, serial)
		taxable := decimal.New(int64(10000+i%100000), -2)
		half := taxable.Mul(decimal.New(9, -2)).Round(2)
		totals := invoice.Totals{Taxable: taxable, CGST: half, SGST: half, IGST: decimal.Zero, Total: taxable.Add(half).Add(half)}
		// The record seals the place of supply and the items too, so they
		// go into the hash exactly as they go into the row.
		items := []invoice.Item{{Description: "bench", HSN: "0902", Quantity: decimal.NewFromInt(1), UnitPrice: taxable,
			GSTRate: decimal.NewFromInt(18), Taxable: totals.Taxable, CGST: totals.CGST, SGST: totals.SGST, IGST: totals.IGST, Total: totals.Total}}
		itemsJSON, err := json.Marshal(items)
		if err != nil {
			return err
		}
		inv := invoice.Invoice{SeriesCode: s.Code, DocType: s.DocType, FY: fy, Serial: serial, Number: num,
			InvoiceDate: date, IssuedAt: at, Status: invoice.StatusIssued, PlaceOfSupply: "27", Items: items, Totals: totals}
		if i%7 == 0 {
			inv.Buyer = &invoice.Buyer{GSTIN: "29AAGCB7383J1Z4"}
		}
		pos++
		head = invoice.IssueRecord(gstin, inv, pos, head).Hash()
		recs = append(recs, rec{pos, serial, invoice.KindIssue, at, head})
		var cancelledAt *time.Time
		var reason *string
		if i%100 == 99 {
			ca := at.Add(time.Second)
			r := fmt.Sprintf("cancelled, test %d", i)
			inv.Status, inv.CancelledAt, inv.CancelReason = invoice.StatusCancelled, &ca, r
			cancelledAt, reason = &ca, &r
			pos++
			head = invoice.CancelRecord(gstin, inv, pos, head).Hash()
			recs = append(recs, rec{pos, serial, invoice.KindCancel, ca, head})
		}
		var bg *string
		if inv.Buyer != nil {
			bg = &inv.Buyer.GSTIN
		}
		t := inv.Totals
		invRows = append(invRows, []any{seller.ID, s.ID, int(fy), serial, num, date, at, fmt.Sprintf("bench%021d", serial), inv.Status,
			bg, inv.PlaceOfSupply, string(itemsJSON),
			t.Taxable.StringFixed(2), t.CGST.StringFixed(2), t.SGST.StringFixed(2), t.IGST.StringFixed(2), t.Total.StringFixed(2), cancelledAt, reason})
		lastDate, lastAt = date, at
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO series_counters (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at, chain_length, chain_head)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, s.ID, int(fy), s.SellerID, int64(n), s.Format.Capacity(), lastDate, lastAt, pos, head); err != nil {
		return err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"invoices"}, []string{"seller_id", "series_id", "fy", "serial", "number", "invoice_date", "issued_at", "public_id", "status",
		"buyer_gstin", "place_of_supply", "items", "taxable", "cgst", "sgst", "igst", "total", "cancelled_at", "cancel_reason"}, pgx.CopyFromRows(invRows)); err != nil {
		return fmt.Errorf("copy invoices: %w", err)
	}
	i := 0
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"chain_records"}, []string{"series_id", "fy", "position", "kind", "serial", "recorded_at", "hash"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == len(recs) {
				return nil, nil
			}
			r := recs[i]
			i++
			return []any{s.ID, int(fy), r.pos, r.kind, r.serial, r.at, r.hash}, nil
		})); err != nil {
		return fmt.Errorf("copy chain: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	_, err = pool.Exec(ctx, `ANALYZE invoices; ANALYZE chain_records`)
	return err
}
