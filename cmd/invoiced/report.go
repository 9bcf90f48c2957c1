package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
	"github.com/mattn/go-isatty"
)

// runReport runs `invoiced report audit|gstr1-docs FLAGS…`; args start at the
// subcommand.
//
//	report audit --gstin G --series CODE --fy 2026-27 [--format csv|json|xlsx] [--part rows|summary] [--out FILE]
//	report gstr1-docs --gstin G --fp 112026|042026-062026|2026-27-Q1 [--out FILE]
//
// --out - or no --out writes to stdout; a file is written under a temporary
// name and renamed into place only when complete. It returns a *usageError
// for a bad command line, the validation sentence for a bad GSTIN, series
// code, year, format or period (checked before connecting), and database
// or write errors. An XLSX audit is refused before connecting when it would
// be written to a terminal.
func runReport(ctx context.Context, e env, args []string) error {
	return dispatch(ctx, e, "report", args, []subcommand{
		{"audit", runReportAudit},
		{"gstr1-docs", runReportDocs},
	})
}

// runReportAudit writes the serial audit of one series-year.
func runReportAudit(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "report audit", "--gstin GSTIN --series CODE --fy 2026-27 [--format csv|json|xlsx] [--part rows|summary] [--out FILE]")
	gstin := fs.String("gstin", "", "the seller's GSTIN (required)")
	code := fs.String("series", "", "the series code (required)")
	fyText := fs.String("fy", "", "the financial year, e.g. 2026-27 (required)")
	format := fs.String("format", "csv", "csv (UTF-8 with BOM, for Excel), json or xlsx")
	part := fs.String("part", "rows", "rows (in CSV the rows alone; in JSON and XLSX the summary too) or summary")
	out := fs.String("out", "-", "output file; - for stdout")
	if err := parseFlags(fs, args, "gstin", "series", "fy"); err != nil {
		return err
	}
	if _, err := gst.ParseGSTIN(*gstin); err != nil {
		return explain("report audit", err)
	}
	if _, err := series.ParseCode(*code); err != nil {
		return explain("report audit", err)
	}
	fy, err := gst.ParseFY(*fyText)
	if err != nil {
		return explain("report audit", err)
	}
	if reports.ContentType(*format) == "" {
		return usageErrorf("report audit: --format %q must be csv, json or xlsx", *format)
	}
	write := reports.WriteAudit
	switch *part {
	case "rows":
	case "summary":
		write = reports.WriteAuditSummary
	default:
		return usageErrorf("report audit: --part %q must be rows or summary", *part)
	}
	if *format == reports.FormatXLSX && (*out == "" || *out == "-") && isTerminal(e.stdout) {
		return usageErrorf("report audit: an XLSX file is binary; write it with --out FILE (or redirect stdout)")
	}
	pool, seller, err := openSeller(ctx, e, "report audit", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	s, err := series.Get(ctx, pool, seller.ID, *code)
	if err != nil {
		return explain("report audit", err)
	}
	return explain("report audit", writeOut(e, *out, func(w io.Writer) error {
		return write(ctx, pool, seller, s, fy, *format, w)
	}))
}

// runReportDocs prints GSTR-1 Table 13 as the GST API's doc_issue JSON.
func runReportDocs(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "report gstr1-docs", "--gstin GSTIN --fp 112026|042026-062026|2026-27-Q1 [--out FILE]")
	gstin := fs.String("gstin", "", "the seller's GSTIN (required)")
	fp := fs.String("fp", "", "return period: MMYYYY, MMYYYY-MMYYYY or YYYY-YY-Qn (required)")
	out := fs.String("out", "-", "output file; - for stdout")
	if err := parseFlags(fs, args, "gstin", "fp"); err != nil {
		return err
	}
	if _, err := gst.ParseGSTIN(*gstin); err != nil {
		return explain("report gstr1-docs", err)
	}
	period, err := reports.ParsePeriod(*fp)
	if err != nil {
		return explain("report gstr1-docs", err)
	}
	pool, seller, err := openSeller(ctx, e, "report gstr1-docs", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	rep, err := reports.DocIssue(ctx, pool, seller, period)
	if err != nil {
		return explain("report gstr1-docs", err)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	for _, d := range rep.Declared {
		fmt.Fprintf(e.stderr, "note: %s\n", d)
	}
	return explain("report gstr1-docs", writeOut(e, *out, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}))
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// writeOut runs write against stdout (out "" or "-") or against a temporary
// file beside out that is renamed to out once write and Close succeed; on
// failure the temporary file is removed and out is left untouched.
func writeOut(e env, out string, write func(io.Writer) error) error {
	if out == "" || out == "-" {
		return write(e.stdout)
	}
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, out)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	fmt.Fprintf(e.stderr, "wrote %s\n", out)
	return nil
}

// errNotIntact is returned by runVerify when a break was found.
var errNotIntact = errors.New("the records are NOT intact")

// runVerify runs `invoiced verify --gstin G [--series CODE] [--fy 2026-27]`
// (args start after "verify"): it prints every finding, two lines per
// series-year (its counts and verdict; its chain head and length, the
// values to anchor outside the database), and a verdict line, and returns
// nil only when every series-year checked is intact (errNotIntact
// otherwise, so the process exits 1). It returns a *usageError for a bad
// command line, the validation sentence for a bad GSTIN, series code or
// year, and reports.ErrSeriesYearNotFound's sentence when the filters
// select no series-year.
func runVerify(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "verify", "--gstin GSTIN [--series CODE] [--fy 2026-27]")
	gstin := fs.String("gstin", "", "the seller's GSTIN (required)")
	code := fs.String("series", "", "only this series (default: all)")
	fyText := fs.String("fy", "", "only this financial year, e.g. 2026-27 (default: all)")
	if err := parseFlags(fs, args, "gstin"); err != nil {
		return err
	}
	if _, err := gst.ParseGSTIN(*gstin); err != nil {
		return explain("verify", err)
	}
	if *code != "" {
		if _, err := series.ParseCode(*code); err != nil {
			return explain("verify", err)
		}
	}
	var fy gst.FY
	if *fyText != "" {
		var err error
		if fy, err = gst.ParseFY(*fyText); err != nil {
			return explain("verify", err)
		}
	}
	pool, seller, err := openSeller(ctx, e, "verify", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	rep, err := reports.Verify(ctx, pool, seller, *code, fy)
	if err != nil {
		return explain("verify", err)
	}
	findings := 0
	for _, c := range rep.Chains {
		for _, f := range c.Findings {
			fmt.Fprintln(e.stdout, f.String())
		}
		if c.Omitted > 0 {
			fmt.Fprintf(e.stdout, "%s %s: %s omitted\n", c.Series, c.FY, reports.Plural(c.Omitted, "further finding", "further findings"))
		}
		findings += len(c.Findings) + c.Omitted
		status := "intact"
		if !c.OK() {
			status = fmt.Sprintf("%s; chain %s", reports.Plural(len(c.Findings)+c.Omitted, "finding", "findings"), c.Verdict())
		}
		if n := c.DeclaredCount(); n > 0 && c.OK() {
			status = "intact with " + reports.Plural(n, "declared serial", "declared serials")
		}
		fmt.Fprintf(e.stdout, "%s %s: %s (%d cancelled), %s, serials %d..%d: %s\n",
			c.Series, c.FY, reports.Plural(c.Invoices, "invoice", "invoices"), c.Cancelled, reports.Plural(c.Records, "chain record", "chain records"),
			c.FirstSerial, c.LastSerial, status)
		for _, d := range c.Declared {
			fmt.Fprintf(e.stdout, "%s %s: declared serials %s (%s to %s) of device %s, %s by %s: %s\n",
				c.Series, c.FY, reports.SerialRange{From: d.First, To: d.Last}, d.FirstNumber, d.LastNumber, d.DeviceID,
				d.DeclaredAt.UTC().Format(time.RFC3339), d.DeclaredBy, d.Reason)
		}
		head := "(none)"
		if len(c.ChainHead) > 0 {
			head = hex.EncodeToString(c.ChainHead)
		}
		fmt.Fprintf(e.stdout, "%s %s: chain head %s length %d\n", c.Series, c.FY, head, c.ChainLength)
	}
	if rep.OK() {
		fmt.Fprintf(e.stdout, "verdict: intact (%s of %s checked)\n", reports.Plural(len(rep.Chains), "series-year", "series-years"), rep.GSTIN)
		return nil
	}
	fmt.Fprintf(e.stdout, "verdict: NOT intact: %s in %s\n", reports.Plural(findings, "finding", "findings"), rep.GSTIN)
	return errNotIntact
}
