package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/lease"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/sellers"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/xuri/excelize/v2"
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// reportSetup seeds a fresh database with seller demoGSTIN, series CH1 and
// three invoices dated in November 2026, the second cancelled, and returns
// its getenv and a pool on it.
func reportSetup(t *testing.T) (func(string) string, *pgxpool.Pool) {
	t.Helper()
	ctx := t.Context()
	url := dbtest.NewURL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	seller := testfactory.Seller(t, pool, &testfactory.SellerOpts{GSTIN: demoGSTIN, Name: "Demo Chai Stall"})
	s := testfactory.Series(t, pool, seller, &testfactory.SeriesOpts{Code: "CH1", Format: "CH1/{FY}/{SEQ:5}"})
	now := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	var ids []int64
	for i, date := range []string{"2026-11-02", "2026-11-10", "2026-11-30"} {
		d, _ := time.Parse(time.DateOnly, date)
		draft, err := document.Prepare(document.Request{InvoiceDate: d, Items: []document.ItemInput{
			{Description: "Masala chai", HSN: "0902", Quantity: "2", UnitPrice: "10.00", GSTRate: "5"}}},
			seller, s, now, document.Policy{BackdateDays: 60})
		if err != nil {
			t.Fatal(err)
		}
		inv, err := invoice.Issue(ctx, pool, seller, s, draft, now.Add(time.Duration(i)*time.Minute), series.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, inv.ID)
	}
	if _, err := invoice.Cancel(ctx, pool, seller, ids[1], "typo in buyer name", now.Add(time.Hour), series.Options{}); err != nil {
		t.Fatal(err)
	}
	return func(k string) string { return map[string]string{"DATABASE_URL": url}[k] }, pool
}

func TestReportAndVerifyCommands(t *testing.T) {
	t.Parallel()
	getenv, pool := reportSetup(t)
	ctx := t.Context()
	dir := t.TempDir()
	runR := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := runReport(ctx, env{getenv: getenv, stdout: &out, stderr: &errOut}, args)
		return out.String(), errOut.String(), err
	}

	// CSV and XLSX to files.
	csvPath, xlsxPath := filepath.Join(dir, "ch1.csv"), filepath.Join(dir, "ch1.xlsx")
	if _, e, err := runR("audit", "--gstin", demoGSTIN, "--series", "ch1", "--fy", "2026-27", "--out", csvPath); err != nil {
		t.Fatalf("report audit csv: %v (%s)", err, e)
	}
	b, err := os.ReadFile(csvPath)
	if err != nil || !bytes.HasPrefix(b, []byte("\xEF\xBB\xBFSerial,Number,")) || !bytes.Contains(b, []byte("typo in buyer name")) {
		t.Errorf("CSV file: %v, %.200q", err, b)
	}
	if _, e, err := runR("audit", "--gstin", demoGSTIN, "--series", "CH1", "--fy", "2026-27", "--format", "xlsx", "--out", xlsxPath); err != nil {
		t.Fatalf("report audit xlsx: %v (%s)", err, e)
	}
	x, err := excelize.OpenFile(xlsxPath)
	if err != nil {
		t.Fatalf("XLSX: %v", err)
	}
	if got := strings.Join(x.GetSheetList(), ","); got != "Summary,Rows" {
		t.Errorf("XLSX sheets = %s", got)
	}
	x.Close()
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}

	// JSON to stdout.
	out, _, err := runR("audit", "--gstin", demoGSTIN, "--series", "CH1", "--fy", "2026-27", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary struct {
			Total, Cancelled int
			Chain            string
		}
		Rows []json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Summary.Total != 3 || doc.Summary.Cancelled != 1 || doc.Summary.Chain != "ok" || len(doc.Rows) != 3 {
		t.Errorf("audit json: %v, %+v", err, doc.Summary)
	}

	// GSTR-1 Table 13.
	out, _, err = runR("gstr1-docs", "--gstin", demoGSTIN, "--fp", "112026")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"gstin":"27AAPFU0939F1ZV","fp":"112026","doc_issue":{"doc_det":[{"doc_num":1,"docs":[{"num":1,"from":"CH1/26-27/00001","to":"CH1/26-27/00003","totnum":3,"cancel":1,"net_issue":2}]}]}}`
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(out)); err != nil || compact.String() != want {
		t.Errorf("gstr1-docs = %s (%v), want %s", out, err, want)
	}

	// verify: intact, then tampered.
	var vout, verr bytes.Buffer
	if err := runVerify(ctx, env{getenv: getenv, stdout: &vout, stderr: &verr}, []string{"--gstin", demoGSTIN}); err != nil {
		t.Fatalf("verify intact: %v\n%s", err, vout.String())
	}
	if !strings.Contains(vout.String(), "verdict: intact (1 series-year of "+demoGSTIN+" checked)") || !chainHeadLine.MatchString(vout.String()) {
		t.Errorf("verify printed %q", vout.String())
	}
	// The head printed is the audit summary's.
	sumOut, _, err := runR("audit", "--gstin", demoGSTIN, "--series", "CH1", "--fy", "2026-27", "--part", "summary")
	if err != nil {
		t.Fatal(err)
	}
	head := chainHeadLine.FindStringSubmatch(vout.String())[1]
	if !strings.Contains(sumOut, "Fingerprint of the year so far,"+head+"\r\n") || !strings.Contains(sumOut, "Tamper-check records,4\r\n") {
		t.Errorf("summary %q lacks head %s", sumOut, head)
	}
	// Filters that match no series-year fail, never "intact".
	vout.Reset()
	err = runVerify(ctx, env{getenv: getenv, stdout: &vout, stderr: &verr}, []string{"--gstin", demoGSTIN, "--fy", "2025-26"})
	if !errors.Is(err, reports.ErrSeriesYearNotFound) || strings.Contains(vout.String(), "intact") {
		t.Errorf("verify of an empty year: %v, printed %q", err, vout.String())
	}
	if _, _, err := runR("audit", "--gstin", demoGSTIN, "--series", "CH1", "--fy", "2025-26"); !errors.Is(err, reports.ErrSeriesYearNotFound) {
		t.Errorf("audit of an empty year: %v", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE invoices SET total = total * 10 WHERE serial = 3`); err != nil {
		t.Fatal(err)
	}
	vout.Reset()
	err = runVerify(ctx, env{getenv: getenv, stdout: &vout, stderr: &verr}, []string{"--gstin", demoGSTIN, "--series", "CH1", "--fy", "2026-27"})
	if !errors.Is(err, errNotIntact) {
		t.Errorf("verify tampered: err = %v, want errNotIntact", err)
	}
	for _, w := range []string{"CH1 2026-27 position 3 serial 3: hash_mismatch", "verdict: NOT intact: 1 finding in " + demoGSTIN + "\n",
		"CH1 2026-27: 3 invoices (1 cancelled), 4 chain records, serials 1..3: 1 finding; chain broken"} {
		if !strings.Contains(vout.String(), w) {
			t.Errorf("verify output lacks %q:\n%s", w, vout.String())
		}
	}
}

var chainHeadLine = regexp.MustCompile(`CH1 2026-27: chain head ([0-9a-f]{64}) length 4\n`)

// TestReportXLSXToTerminal: binary is never written to a terminal.
func TestReportXLSXToTerminal(t *testing.T) {
	t.Parallel()
	tty := openTTY(t)
	var errOut bytes.Buffer
	noEnv := func(string) string { return "" }
	err := runReport(t.Context(), env{getenv: noEnv, stdout: tty, stderr: &errOut},
		[]string{"audit", "--gstin", demoGSTIN, "--series", "CH1", "--fy", "2026-27", "--format", "xlsx"})
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--out") {
		t.Fatalf("xlsx to a terminal: %v, want a usage error naming --out", err)
	}
}

// openTTY returns the terminal end of a new pseudo-terminal.
func openTTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}

func TestReportUsageErrors(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		verify bool
		args   []string
		want   string
		usage  bool
	}{
		{false, nil, "report audit|gstr1-docs", true},
		{false, []string{"audit", "--gstin", demoGSTIN, "--series", "CH1"}, "missing required flag --fy", true},
		{false, []string{"audit", "--gstin", demoGSTIN, "--series", "CH1", "--fy", "2026-27", "--format", "pdf"}, "csv, json or xlsx", true},
		{false, []string{"audit", "--gstin", demoGSTIN, "--series", "CH1", "--fy", "2026-27", "--part", "head"}, "rows or summary", true},
		{false, []string{"audit", "--gstin", demoGSTIN, "--series", "CH1", "--fy", "2026"}, "2026-27", false},
		{false, []string{"gstr1-docs", "--gstin", demoGSTIN, "--fp", "132026"}, "not a month", false},
		{false, []string{"gstr1-docs", "--gstin", "27AAPFU0939F1ZX", "--fp", "112026"}, "check character", false},
		{true, nil, "missing required flag --gstin", true},
		{true, []string{"--gstin", demoGSTIN, "--fy", "26-27"}, "2026-27", false},
	} {
		var out, errOut bytes.Buffer
		var err error
		if tc.verify {
			err = runVerify(t.Context(), env{getenv: noEnv, stdout: &out, stderr: &errOut}, tc.args)
		} else {
			err = runReport(t.Context(), env{getenv: noEnv, stdout: &out, stderr: &errOut}, tc.args)
		}
		var ue *usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &ue) != tc.usage {
			t.Errorf("%v: err = %v, want it to mention %q (usage error: %v)", tc.args, err, tc.want, tc.usage)
		}
	}
}

func TestPeriodsCommands(t *testing.T) {
	t.Parallel()
	getenv, _ := reportSetup(t)
	ctx := t.Context()
	runP := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runPeriods(ctx, env{getenv: getenv, stdout: &out, stderr: &errOut}, args)
		return out.String(), err
	}
	if out, err := runP("lock", "--gstin", demoGSTIN, "--fp", "042017"); err != nil || !strings.Contains(out, "locked Apr 2017 (042017)") {
		t.Fatalf("lock: %q, %v", out, err)
	}
	if out, err := runP("lock", "--gstin", demoGSTIN, "--fp", "042017"); err != nil || !strings.Contains(out, "was locked already") {
		t.Fatalf("lock again: %q, %v", out, err)
	}
	if _, err := runP("lock", "--gstin", demoGSTIN, "--fp", "012099"); !errors.Is(err, invoice.ErrPeriodNotEnded) {
		t.Fatalf("lock a future month: %v", err)
	}
	if _, err := runP("unlock", "--gstin", demoGSTIN, "--fp", "042017"); err == nil || !strings.Contains(err.Error(), "--reason") {
		t.Fatalf("unlock without --reason: %v", err)
	}
	if out, err := runP("unlock", "--gstin", demoGSTIN, "--fp", "042017", "--reason", "GSTR-1 amended"); err != nil || !strings.Contains(out, "unlocked Apr 2017") {
		t.Fatalf("unlock: %q, %v", out, err)
	}
	if _, err := runP("unlock", "--gstin", demoGSTIN, "--fp", "042017", "--reason", "again"); !errors.Is(err, invoice.ErrPeriodNotLocked) {
		t.Fatalf("unlock twice: %v", err)
	}
	out, err := runP("list", "--gstin", demoGSTIN)
	if err != nil || !strings.Contains(out, "history:") || !strings.Contains(out, "unlock  042017  cli  GSTR-1 amended") {
		t.Fatalf("list: %q, %v", out, err)
	}
}

func TestSeriesAddWithOpening(t *testing.T) {
	t.Parallel()
	getenv, pool := reportSetup(t)
	ctx := t.Context()
	run := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := runSeries(ctx, env{getenv: getenv, stdout: &out, stderr: &errOut}, args)
		return out.String(), errOut.String(), err
	}
	if _, _, err := run("add", "--gstin", demoGSTIN, "--code", "MV", "--format", "MV/{FY}/{SEQ:5}", "--opening-fy", "2025-26"); err == nil || !strings.Contains(err.Error(), "needs all of") {
		t.Fatalf("partial opening: %v", err)
	}
	if _, _, err := run("add", "--gstin", demoGSTIN, "--code", "MV", "--format", "MV/{FY}/{SEQ:5}", "--opening-fy", "2025-26",
		"--opening-last-serial", "42", "--opening-last-date", "2026-03-15", "--opening-last-number", "MV/25-26/00041"); !errors.Is(err, document.ErrInvalid) {
		t.Fatalf("wrong last number: %v", err)
	}
	_, errOut, err := run("add", "--gstin", demoGSTIN, "--code", "MV", "--format", "MV/{FY}/{SEQ:5}", "--opening-fy", "2025-26",
		"--opening-last-serial", "42", "--opening-last-date", "2026-03-15", "--opening-last-number", "MV/25-26/00042")
	if err != nil || !strings.Contains(errOut, "next number is serial 43") {
		t.Fatalf("series add with an opening: %v, %q", err, errOut)
	}
	var last int64
	if err := pool.QueryRow(ctx, `SELECT last_serial FROM series_counters c JOIN series s ON s.id = c.series_id WHERE s.code = 'MV' AND c.fy = 2025`).Scan(&last); err != nil || last != 42 {
		t.Fatalf("counter after the opening: %d, %v", last, err)
	}
	var vout, verr bytes.Buffer
	if err := runVerify(ctx, env{getenv: getenv, stdout: &vout, stderr: &verr}, []string{"--gstin", demoGSTIN, "--series", "MV"}); err != nil || !strings.Contains(vout.String(), "MV 2025-26: chain head ") {
		t.Fatalf("verify a declared year: %v\n%s", err, vout.String())
	}
}

// TestLeasesCommands: a lost terminal's lease of CH1 is ended by force from
// the command line, listed, and settled with the last serial it may have
// printed; the series then continues after it.
func TestLeasesCommands(t *testing.T) {
	t.Parallel()
	getenv, pool := reportSetup(t)
	ctx := t.Context()
	runL := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := runLeases(ctx, env{getenv: getenv, stdout: &out, stderr: &errOut, now: func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, gst.IST) }}, args)
		return out.String(), err
	}
	seller, err := sellers.ByGSTIN(ctx, pool, demoGSTIN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := series.Get(ctx, pool, seller.ID, "CH1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lease.TakeLease(ctx, pool, s, "till-3", "test", time.Date(2026, 11, 30, 12, 0, 0, 0, gst.IST)); err != nil {
		t.Fatal(err)
	}
	if _, err := runL("end", "--gstin", demoGSTIN, "--series", "CH1"); err == nil || !strings.Contains(err.Error(), "--reason") {
		t.Fatalf("end without --reason: %v", err)
	}
	if out, err := runL("end", "--gstin", demoGSTIN, "--series", "CH1", "--reason", "till stolen"); err != nil || !strings.Contains(out, "at serial 3 of 2026-27") {
		t.Fatalf("end: %q, %v", out, err)
	}
	if out, err := runL("list", "--gstin", demoGSTIN, "--series", "CH1"); err != nil || !strings.Contains(out, "till-3") || !strings.Contains(out, "forced") {
		t.Fatalf("list: %q, %v", out, err)
	}
	if _, err := runL("settle", "--gstin", demoGSTIN, "--series", "CH1", "--years", "2026-27:2,2027-28:0", "--reason", "x"); !errors.Is(err, lease.ErrDeclaredTooLow) {
		t.Fatalf("settle below the stored serials: %v", err)
	}
	if _, err := runL("settle", "--gstin", demoGSTIN, "--series", "CH1", "--years", "2026-27:5", "--reason", "x"); !errors.Is(err, lease.ErrLeaseYearsUndeclared) {
		t.Fatalf("settle without 2027-28: %v", err)
	}
	if out, err := runL("settle", "--gstin", demoGSTIN, "--series", "CH1", "--years", "2026-27:5,2027-28:0", "--reason", "paper roll ends at 5"); err != nil || !strings.Contains(out, "continues at 6") {
		t.Fatalf("settle: %q, %v", out, err)
	}
	if p, err := lease.NextPosition(ctx, pool, s, 2026); err != nil || p.Serial != 6 {
		t.Fatalf("next after settling: %+v, %v", p, err)
	}
	// The settlement is a declaration in the chain: the year verifies
	// intact, listing the declared serials (issue 39: before, verify
	// exited 1 with serial_gap and counter_ahead for 4-5).
	var vout, verr bytes.Buffer
	err = runVerify(ctx, env{getenv: getenv, stdout: &vout, stderr: &verr}, []string{"--gstin", demoGSTIN, "--series", "CH1", "--fy", "2026-27"})
	if err != nil || !strings.Contains(vout.String(), "intact with 2 declared serials") ||
		!strings.Contains(vout.String(), "declared serials 4-5 (CH1/26-27/00004 to CH1/26-27/00005) of device till-3") ||
		!strings.Contains(vout.String(), "verdict: intact") {
		t.Fatalf("verify after the settlement: %v\n%s", err, vout.String())
	}
}
