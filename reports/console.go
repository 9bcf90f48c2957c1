package reports

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
)

// This file holds the reads behind the console's pages (package console):
// a series-year's summary, its rows a page at a time, its invoices per day,
// and each series' activity.

// AuditSummary returns the summary of the serial audit of s in fy, read in
// its own snapshot; it fails as AuditSummaryTx does.
func AuditSummary(ctx context.Context, b db.OptionsBeginner, seller gst.Seller, s gst.Series, fy gst.FY) (Summary, error) {
	var sum Summary
	err := readTx(ctx, b, func(tx pgx.Tx) error {
		var err error
		sum, err = AuditSummaryTx(ctx, tx, seller, s, fy)
		return err
	})
	return sum, err
}

// RowQuery selects audit rows of a series-year: those with a serial above
// After, at most Limit of them, or, when Number is set, the invoice with
// that number alone.
type RowQuery struct {
	After  int64
	Limit  int
	Number string
}

// AuditRows returns the audit rows of s in fy that q selects, in serial
// order (without items). It fails when the database fails or holds an
// address that is not the JSON the issuer writes.
func AuditRows(ctx context.Context, b db.OptionsBeginner, s gst.Series, fy gst.FY, q RowQuery) ([]Row, error) {
	var out []Row
	err := readTx(ctx, b, func(tx pgx.Tx) error {
		return walkInvoicePage(ctx, tx, s, fy, q, func(r *invoiceRow) error {
			row, err := rowOf(r, s.Code, fy)
			if err != nil {
				return err
			}
			out = append(out, *row)
			return nil
		})
	})
	return out, err
}

// DayCount is how many invoices of a series-year are dated Date.
type DayCount struct {
	Date      time.Time
	Issued    int64 // all invoices dated that day
	Cancelled int64 // of which cancelled
}

// Activity is what the console's overview shows of one series.
type Activity struct {
	Series      gst.Series
	Years       []series.Usage // last serial per financial year, newest first
	IssuedToday int64          // invoices dated today (IST)
	CancelledFY int64          // invoices of the current year cancelled
}

// SeriesActivity returns the activity of each of the seller's series on
// the day today (a civil date, IST), ordered by code. It fails only when
// the database fails.
func SeriesActivity(ctx context.Context, b db.OptionsBeginner, seller gst.Seller, today time.Time) ([]Activity, error) {
	var out []Activity
	err := readTx(ctx, b, func(tx pgx.Tx) error {
		all, err := series.List(ctx, tx, seller.ID)
		if err != nil {
			return err
		}
		counts, err := activityCounts(ctx, tx, seller.ID, today, gst.FYOf(today))
		if err != nil {
			return err
		}
		for _, su := range all {
			c := counts[su.ID]
			out = append(out, Activity{Series: su.Series, Years: su.Years, IssuedToday: c[0], CancelledFY: c[1]})
		}
		return nil
	})
	return out, err
}

// Head is what a series-year page shows without checking the whole year:
// the counter, the chain's length and head as the counter keeps them, the
// first and last numbers, and the locked months. Each is one index lookup,
// whatever the year's size.
type Head struct {
	LastSerial    int64
	ChainLength   int64
	ChainHead     string // hex
	FirstNumber   string
	LastNumber    string
	LockedPeriods []LockedPeriod
}

// SeriesYearHead returns the head of s in fy. It returns
// ErrSeriesYearNotFound when the year has no counter row, and fails
// otherwise only when the database fails.
func SeriesYearHead(ctx context.Context, b db.OptionsBeginner, seller gst.Seller, s gst.Series, fy gst.FY) (Head, error) {
	var h Head
	err := readTx(ctx, b, func(tx pgx.Tx) error {
		ctr, err := counterOf(ctx, tx, s, fy)
		if err != nil {
			return err
		}
		if ctr == nil {
			return apperr.Errorf(ErrSeriesYearNotFound, "series %s has no invoice in %s", s.Code, fy)
		}
		h.LastSerial, h.ChainLength, h.ChainHead = ctr.LastSerial, ctr.ChainLength, hex.EncodeToString(ctr.ChainHead)
		if h.FirstNumber, h.LastNumber, err = endNumbers(ctx, tx, s, fy); err != nil {
			return err
		}
		h.LockedPeriods, err = lockedPeriods(ctx, tx, seller.ID, fy)
		return err
	})
	return h, err
}
