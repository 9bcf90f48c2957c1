package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/migrations"
	"github.com/invoiced/invoiced/sellers"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"sync"
	"sync/atomic"
	"time"
)

// seedSeries seeds n invoices of series BENCH of the seller gstin in FY
// 2026-27 (the series the audit and verify modes measure).
func seedSeries(ctx context.Context, pool *pgxpool.Pool, n int) error {
	if _, err := migrations.Up(ctx, pool); err != nil {
		return err
	}
	seller, err := sellerNamed(ctx, pool, gstin, "Bench Co")
	if err != nil {
		return err
	}
	s, err := series.CreateSeries(ctx, pool, series.NewSeries{SellerID: seller.ID, Code: "BENCH", DocType: "invoice", Format: "B/{FY}/{SEQ:7}"})
	if err != nil {
		return err
	}
	if err := seedSeriesYear(ctx, pool, seller, s, 2026, n); err != nil {
		return err
	}
	_, err = pool.Exec(ctx, `ANALYZE invoices; ANALYZE chain_records; ANALYZE series_counters`)
	return err
}

// deepLayout is the shape of a database years deep: sellers, each with
// seriesPer series, each with invoices in years financial years ending with
// 2026-27, per invoices each.
type deepLayout struct {
	sellers, seriesPer, years, per, jobs int
}

// seedDeep seeds l's sellers (GSTINs 27AAPFD0001F1Z., …), their series
// (D01/{FY}/{SEQ:6}, …: at most 99 series a seller and 999,999 invoices a
// series-year, so that a number fits 16 characters) and per invoices in
// each series-year, jobs series-years at a time, each in a transaction of
// its own, printing progress every 10%. Sellers and series already there
// are reused; a series-year already seeded fails (the counter row exists).
func seedDeep(ctx context.Context, pool *pgxpool.Pool, l deepLayout, progress func(string)) error {
	if l.seriesPer > 99 || l.per > 999999 || l.years > 10 || l.sellers > 9999 {
		return fmt.Errorf("at most 99 series a seller, 999,999 invoices a series-year, 10 years, 9,999 sellers")
	}
	if _, err := migrations.Up(ctx, pool); err != nil {
		return err
	}
	type job struct {
		seller gst.Seller
		s      gst.Series
		fy     gst.FY
	}
	var jobs []job
	for i := 1; i <= l.sellers; i++ {
		first14 := fmt.Sprintf("27AAPFD%04dF1Z", i)
		c, err := gst.CheckChar(first14)
		if err != nil {
			return err
		}
		seller, err := sellerNamed(ctx, pool, first14+string(c), fmt.Sprintf("Deep Seller %d", i))
		if err != nil {
			return err
		}
		for j := 1; j <= l.seriesPer; j++ {
			code := fmt.Sprintf("D%02d", j)
			s, err := series.Get(ctx, pool, seller.ID, code)
			if err != nil {
				if s, err = series.CreateSeries(ctx, pool, series.NewSeries{SellerID: seller.ID, Code: code, DocType: "invoice", Format: code + "/{FY}/{SEQ:6}"}); err != nil {
					return err
				}
			}
			for y := 0; y < l.years; y++ {
				jobs = append(jobs, job{seller, s, gst.FY(2026 - y)})
			}
		}
	}
	next := make(chan job)
	var done atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range max(1, l.jobs) {
		wg.Go(func() {
			for j := range next {
				if err := seedSeriesYear(ctx, pool, j.seller, j.s, j.fy, l.per); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%s %s %s: %w", j.seller.GSTIN, j.s.Code, j.fy, err)
					}
					mu.Unlock()
					cancel()
					continue
				}
				if d := done.Add(1); d%max(1, int64(len(jobs))/10) == 0 {
					progress(fmt.Sprintf("%d of %d series-years seeded", d, len(jobs)))
				}
			}
		})
	}
	for _, j := range jobs {
		select {
		case next <- j:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	_, err := pool.Exec(ctx, `ANALYZE invoices; ANALYZE chain_records; ANALYZE series_counters`)
	return err
}

// sellerNamed returns the seller registered under gstin, registering it
// first when it is not.
func sellerNamed(ctx context.Context, pool *pgxpool.Pool, gstin, name string) (gst.Seller, error) {
	seller, err := sellers.ByGSTIN(ctx, pool, gstin)
	if err == nil {
		return seller, nil
	}
	return sellers.Create(ctx, pool, gstin, name)
}

// seedSeriesYear inserts n invoices of s in fy, dated through the year,
// every 100th cancelled, with their chain records hashed as IssueTx and
// CancelTx would, public ids as issuing gives them (routed by seller, with
// the issue time), and the counter row that ends where they end, in one
// transaction. Invoices are generated
// while they are copied; only the chain records (about 80 bytes each) are
// kept until their own copy.
func seedSeriesYear(ctx context.Context, pool *pgxpool.Pool, seller gst.Seller, s gst.Series, fy gst.FY, n int) error {
	base := fy.Start().Add(-2 * time.Hour) // 03:30 IST on 1 April
	dateOf := func(i int) time.Time { return fy.Start().AddDate(0, 0, i*364/n) }
	atOf := func(i int) time.Time { return base.Add(time.Duration(i) * (364 * 24 * time.Hour / time.Duration(n))) }
	type rec struct {
		pos, serial int64
		kind        string
		at          time.Time
		hash        []byte
	}
	recs := make([]rec, 0, n+n/100)
	var head []byte
	var pos int64
	gstin := string(seller.GSTIN)

	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// The counter row first (the invoices reference it); its chain end is
	// known only after the invoices.
	if _, err := tx.Exec(ctx, `INSERT INTO series_counters (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, s.ID, int(fy), s.SellerID, int64(n), s.Format.Capacity(), dateOf(n-1), atOf(n-1)); err != nil {
		return fmt.Errorf("counter: %w", err)
	}
	i := 0
	rows := pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		serial := int64(i + 1)
		date, at := dateOf(i), atOf(i)
		num, err := s.Format.Render(fy, serial)
		if err != nil {
			return nil, err
		}
		taxable := decimal.New(int64(10000+i%100000), -2)
		half := taxable.Mul(decimal.New(9, -2)).Round(2)
		totals := document.Totals{Taxable: taxable, CGST: half, SGST: half, IGST: decimal.Zero, Total: taxable.Add(half).Add(half)}
		// The record seals the place of supply and the items too, so they
		// go into the hash exactly as they go into the row.
		items := []document.Item{{Description: "seeded", HSN: "0902", Quantity: decimal.NewFromInt(1), UnitPrice: taxable,
			GSTRate: decimal.NewFromInt(18), Taxable: totals.Taxable, CGST: totals.CGST, SGST: totals.SGST, IGST: totals.IGST, Total: totals.Total}}
		itemsJSON, err := json.Marshal(items)
		if err != nil {
			return nil, err
		}
		inv := document.Invoice{SeriesCode: s.Code, DocType: s.DocType, FY: fy, Serial: serial, Number: num,
			InvoiceDate: date, IssuedAt: at, Status: document.StatusIssued, PlaceOfSupply: "27", Items: items, Totals: totals}
		if i%7 == 0 {
			inv.Buyer = &document.Buyer{GSTIN: "29AAGCB7383J1Z4"}
		}
		pos++
		head = document.IssueRecord(gstin, inv, pos, head).Hash()
		recs = append(recs, rec{pos, serial, document.KindIssue, at, head})
		var cancelledAt *time.Time
		var reason *string
		if i%100 == 99 {
			ca := at.Add(time.Second)
			r := fmt.Sprintf("cancelled, test %d", i)
			inv.Status, inv.CancelledAt, inv.CancelReason = document.StatusCancelled, &ca, r
			cancelledAt, reason = &ca, &r
			pos++
			head = document.CancelRecord(gstin, inv, pos, head).Hash()
			recs = append(recs, rec{pos, serial, document.KindCancel, ca, head})
		}
		var bg *string
		if inv.Buyer != nil {
			bg = &inv.Buyer.GSTIN
		}
		i++
		t := inv.Totals
		return []any{seller.ID, s.ID, int(fy), serial, num, date, at, document.NewPublicID(seller.ID, at), inv.Status,
			bg, inv.PlaceOfSupply, string(itemsJSON),
			t.Taxable.StringFixed(2), t.CGST.StringFixed(2), t.SGST.StringFixed(2), t.IGST.StringFixed(2), t.Total.StringFixed(2), cancelledAt, reason}, nil
	})
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"invoices"}, []string{"seller_id", "series_id", "fy", "serial", "number", "invoice_date", "issued_at", "public_id", "status",
		"buyer_gstin", "place_of_supply", "items", "taxable", "cgst", "sgst", "igst", "total", "cancelled_at", "cancel_reason"}, rows); err != nil {
		return fmt.Errorf("copy invoices: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE series_counters SET chain_length = $3, chain_head = $4 WHERE series_id = $1 AND fy = $2 AND seller_id = $5`,
		s.ID, int(fy), pos, head, s.SellerID); err != nil {
		return fmt.Errorf("counter: %w", err)
	}
	k := 0
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"chain_records"}, []string{"series_id", "fy", "position", "kind", "serial", "recorded_at", "hash", "seller_id"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if k == len(recs) {
				return nil, nil
			}
			r := recs[k]
			k++
			return []any{s.ID, int(fy), r.pos, r.kind, r.serial, r.at, r.hash, s.SellerID}, nil
		})); err != nil {
		return fmt.Errorf("copy chain: %w", err)
	}
	return tx.Commit(ctx)
}
