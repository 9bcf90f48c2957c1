package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/freetext"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
)

// runSeries dispatches `invoiced series add|list`.
func runSeries(ctx context.Context, e env, args []string) error {
	return dispatch(ctx, e, "series", args, []subcommand{
		{"add", runSeriesAdd},
		{"list", runSeriesList},
	})
}

// runSeriesAdd creates a numbering series for the seller with --gstin and
// prints it as one series-list row. It fails when the seller is unknown, a
// value is invalid, the code is taken, or the format overlaps another series
// of the seller.
func runSeriesAdd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "series add", "--gstin GSTIN --code CODE --format FORMAT [--doc-type invoice] [--shop LABEL] [--opening-fy 2026-27 --opening-last-serial N --opening-last-date YYYY-MM-DD --opening-last-number NUMBER]")
	gstin := fs.String("gstin", "", "GSTIN of the seller that owns the series (required)")
	code := fs.String("code", "", "series code, unique per seller, e.g. CH1 (required)")
	docType := fs.String("doc-type", "invoice", "document type: invoice, bill_of_supply, credit_note, debit_note, receipt_voucher, payment_voucher, refund_voucher, delivery_challan, …")
	format := fs.String("format", "", "number format, e.g. 'CH1/{FY}/{SEQ:5}' (required)")
	shop := fs.String("shop", "", "free-text shop or counter label")
	opFY := fs.String("opening-fy", "", "moving here mid-year: the financial year of the opening (with the three below)")
	opSerial := fs.Int64("opening-last-serial", 0, "the last serial issued before invoiced in that year")
	opDate := fs.String("opening-last-date", "", "the date of that last invoice, YYYY-MM-DD")
	opNumber := fs.String("opening-last-number", "", "the number of that last invoice, as the format renders it")
	if err := parseFlags(fs, args, "gstin", "code", "format", "doc-type"); err != nil {
		return err
	}
	var op *invoice.Opening
	if *opFY != "" || *opSerial != 0 || *opDate != "" || *opNumber != "" {
		if *opFY == "" || *opSerial == 0 || *opDate == "" || *opNumber == "" {
			return usageErrorf("series add: an opening needs all of --opening-fy, --opening-last-serial, --opening-last-date and --opening-last-number")
		}
		fy, err := gst.ParseFY(*opFY)
		if err != nil {
			return explain("series add", err)
		}
		d, err := gst.ParseDate(*opDate)
		if err != nil {
			return explain("series add", err)
		}
		op = &invoice.Opening{FY: fy, LastSerial: *opSerial, LastInvoiceDate: d, LastNumber: *opNumber}
	}
	pool, seller, err := openSeller(ctx, e, "series add", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	var s gst.Series
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		s, err = series.CreateSeriesTx(ctx, tx, series.NewSeries{
			SellerID: seller.ID, Code: *code, DocType: *docType, Format: *format, Shop: *shop,
		})
		if err != nil || op == nil {
			return err
		}
		_, err = invoice.DeclareOpeningTx(ctx, tx, seller, s, *op, "cli", time.Now())
		return err
	})
	if err != nil {
		return explain("series add", err)
	}
	if op != nil {
		fmt.Fprintf(e.stderr, "declared serials 1 to %d of %s as issued before invoiced; the next number is serial %d\n", op.LastSerial, op.FY, op.LastSerial+1)
	}
	writeSeries(e, []series.SeriesUsage{{Series: s}})
	return nil
}

// runSeriesList prints the series of the seller with --gstin under a header:
// CODE, DOC_TYPE, FORMAT, SHOP, USAGE (per financial year used, the last
// serial). It fails when the seller is unknown.
func runSeriesList(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "series list", "--gstin GSTIN")
	gstin := fs.String("gstin", "", "GSTIN of the seller (required)")
	if err := parseFlags(fs, args, "gstin"); err != nil {
		return err
	}
	pool, seller, err := openSeller(ctx, e, "series list", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	ss, err := series.List(ctx, pool, seller.ID)
	if err != nil {
		return explain("series list", err)
	}
	writeSeries(e, ss)
	return nil
}

// writeSeries prints series as an aligned table on stdout.
func writeSeries(e env, ss []series.SeriesUsage) {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CODE\tDOC_TYPE\tFORMAT\tSHOP\tUSAGE")
	for _, s := range ss {
		var usage []string
		for _, y := range s.Years {
			usage = append(usage, fmt.Sprintf("%s:%d", y.FY, y.LastSerial))
		}
		u := strings.Join(usage, ",")
		if u == "" {
			u = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Code, s.DocType, s.Format, freetext.Visible(s.Shop), u)
	}
	tw.Flush()
}
