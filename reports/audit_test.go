package reports_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/reports"
	"github.com/xuri/excelize/v2"
)

func audit(t *testing.T, f fixture, s gst.Series, fy gst.FY, format string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := reports.WriteAudit(t.Context(), f.pool, f.seller, s, fy, format, &buf); err != nil {
		t.Fatalf("WriteAudit(%s): %v", format, err)
	}
	return buf.Bytes()
}

func TestAuditCSV(t *testing.T) {
	t.Parallel()
	f := setup(t)
	got := audit(t, f, f.ch1, 2026, reports.FormatCSV)
	golden(t, "audit_ch1_2026-27.csv", got)

	if !bytes.HasPrefix(got, []byte("\xEF\xBB\xBF")) {
		t.Fatal("no UTF-8 BOM")
	}
	// One rectangular table: encoding/csv with its defaults (every record
	// as wide as the first) reads the header and exactly one row per number.
	recs, err := csv.NewReader(bytes.NewReader(got[3:])).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse as one table: %v", err)
	}
	if len(recs) != 7 || recs[0][0] != "Serial" || recs[0][len(recs[0])-1] != "Cancel hash" {
		t.Fatalf("%d records, header %q; want the header and 6 rows", len(recs), recs[0])
	}
	for i, rec := range recs[1:] {
		if rec[0] != fmt.Sprint(i+1) {
			t.Errorf("record %d has serial %q", i+1, rec[0])
		}
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	// Rule 46(d), (e): the buyer's address and the address of delivery.
	if a := recs[1][col["Buyer address"]]; a != "14 Residency Road, Shanthala Nagar, Bengaluru 560025, 29-Karnataka" {
		t.Errorf("buyer address of serial 1 = %q", a)
	}
	if a := recs[5][col["Ship to"]]; a != "Bengaluru Traders, godown, Plot 7, KIADB, Hoskote 562114, 29-Karnataka" {
		t.Errorf("address of delivery of serial 5 = %q", a)
	}
	row2 := recs[2]
	if row2[col["Number"]] != "CH1/26-27/00002" || row2[col["Status"]] != "cancelled" || row2[col["Cancel reason"]] != `Wrong buyer, "duplicate" entry` ||
		len(row2[col["Hash"]]) != 64 || len(row2[col["Cancel hash"]]) != 64 || row2[col["Issue position"]] != "2" || row2[col["Cancel position"]] != "4" ||
		row2[col["Cancelled at (IST)"]] != "2026-12-01T09:35:00.000000+05:30" {
		t.Errorf("row of serial 2 = %q", row2)
	}
	row1 := recs[1]
	if row1[col["Buyer name"]] != "Bengaluru Traders" || row1[col["Place of supply"]] != "29" || row1[col["Cancel position"]] != "" || row1[col["Cancel hash"]] != "" {
		t.Errorf("row of serial 1 = %q", row1)
	}
	if recs[3][col["Buyer name"]] != "Śrī Stores, Kothrud" {
		t.Errorf("buyer name of serial 3 = %q", recs[3][col["Buyer name"]])
	}
}

func TestAuditSummaryCSV(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var buf bytes.Buffer
	if err := reports.WriteAuditSummary(t.Context(), f.pool, f.seller, f.ch1, 2026, reports.FormatCSV, &buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "audit_ch1_2026-27_summary.csv", buf.Bytes())
	recs := csvRecords(t, buf.Bytes())
	fields := map[string]string{}
	for _, r := range recs {
		fields[r[0]] = r[1]
	}
	if recs[0][0] != "Field" || fields["Seller GSTIN"] != "27AAPFU0939F1ZV" || fields["Tamper-check records"] != "7" ||
		!strings.HasPrefix(fields["Verdict"], "Intact: ") || recs[len(recs)-1][0] != "Fingerprint of the year so far" || len(recs[len(recs)-1][1]) != 64 {
		t.Errorf("summary = %q", recs)
	}
	// JSON: the summary object alone.
	buf.Reset()
	if err := reports.WriteAuditSummary(t.Context(), f.pool, f.seller, f.ch1, 2026, reports.FormatJSON, &buf); err != nil {
		t.Fatal(err)
	}
	var doc map[string]reports.Summary
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil || len(doc) != 1 || doc["summary"].ChainHead != fields["Fingerprint of the year so far"] {
		t.Errorf("JSON summary: %v, %s", err, buf.Bytes())
	}
	// XLSX: the Summary sheet alone.
	buf.Reset()
	if err := reports.WriteAuditSummary(t.Context(), f.pool, f.seller, f.ch1, 2026, reports.FormatXLSX, &buf); err != nil {
		t.Fatal(err)
	}
	x, err := excelize.OpenReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if sheets := strings.Join(x.GetSheetList(), ","); sheets != "Summary" {
		t.Errorf("sheets = %s", sheets)
	}
}

func TestAuditJSON(t *testing.T) {
	t.Parallel()
	f := setup(t)
	got := audit(t, f, f.ch1, 2026, reports.FormatJSON)
	golden(t, "audit_ch1_2026-27.json", got)
	var doc struct {
		Summary reports.Summary `json:"summary"`
		Rows    []reports.Row   `json:"rows"`
	}
	if err := json.Unmarshal(got, &doc); err != nil {
		t.Fatalf("JSON does not parse: %v", err)
	}
	s := doc.Summary
	if s.FirstNumber != "CH1/26-27/00001" || s.LastNumber != "CH1/26-27/00006" || s.Total != 6 || s.Cancelled != 1 || s.NetIssued != 5 ||
		s.Chain != "ok" || !s.Intact || len(s.Gaps) != 0 || s.CounterDrift != 0 || s.ChainRecords != 7 {
		t.Errorf("summary = %+v", s)
	}
	if len(doc.Rows) != 6 || doc.Rows[1].CancelReason == "" || doc.Rows[0].Hash == "" {
		t.Errorf("rows = %+v", doc.Rows)
	}
}

func TestAuditShowsTampering(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const ch1 = `series_id = (SELECT id FROM series WHERE code = 'CH1') AND fy = 2026`
	f.exec(t,
		`DELETE FROM chain_records WHERE `+ch1+` AND serial = 3`,
		`DELETE FROM invoices WHERE `+ch1+` AND serial = 3`,
		`UPDATE invoices SET invoice_date = '2026-11-01', total = 1 WHERE `+ch1+` AND serial = 4`,
		`UPDATE series_counters SET last_serial = 7 WHERE `+ch1)
	got := audit(t, f, f.ch1, 2026, reports.FormatJSON)
	var doc struct {
		Summary reports.Summary `json:"summary"`
	}
	if err := json.Unmarshal(got, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Summary
	gaps, _ := json.Marshal(s.Gaps)
	if string(gaps) != `[{"from":3,"to":3},{"from":7,"to":7}]` || s.CounterDrift != 1 || len(s.DateRegressions) != 1 ||
		s.DateRegressions[0].Serial != 4 || s.Intact || !strings.HasPrefix(s.Chain, "broken at position 3: ") {
		t.Errorf("summary = %+v", s)
	}
	var sumCSV bytes.Buffer
	if err := reports.WriteAuditSummary(t.Context(), f.pool, f.seller, f.ch1, 2026, reports.FormatCSV, &sumCSV); err != nil {
		t.Fatal(err)
	}
	csvOut := sumCSV.String()
	for _, w := range []string{"Missing numbers,3; 7\r\n", "Tamper check,broken at position 3: ",
		"Numbers given out but not stored,1 (numbers up to serial 7 were given out; the last invoice stored is serial 6)"} {
		if !strings.Contains(csvOut, w) {
			t.Errorf("CSV lacks %q", w)
		}
	}
}

func TestAuditXLSX(t *testing.T) {
	t.Parallel()
	f := setup(t)
	got := audit(t, f, f.ch1, 2026, reports.FormatXLSX)
	x, err := excelize.OpenReader(bytes.NewReader(got))
	if err != nil {
		t.Fatalf("XLSX does not open: %v", err)
	}
	defer x.Close()
	if sheets := strings.Join(x.GetSheetList(), ","); sheets != "Summary,Rows" {
		t.Fatalf("sheets = %s", sheets)
	}
	sum, err := x.GetRows("Summary")
	if err != nil {
		t.Fatal(err)
	}
	if sum[1][0] != "Seller GSTIN" || sum[1][1] != "27AAPFU0939F1ZV" {
		t.Errorf("summary = %q", sum[:2])
	}
	rows, err := x.GetRows("Rows")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 7 || rows[0][0] != "Serial" || rows[2][1] != "CH1/26-27/00002" {
		t.Fatalf("rows = %q", rows)
	}
	// Dates are dates and amounts numbers with two decimals, as displayed.
	if rows[1][2] != "2026-10-30" || rows[1][3] != "2026-12-01T09:32:00+05:30" || rows[1][11] != "1,553.73" || rows[1][10] != "98.75" {
		t.Errorf("row 1 = %q", rows[1])
	}
	raw, _ := x.GetCellValue("Rows", "L2", excelize.Options{RawCellValue: true})
	if raw != "1553.73" {
		t.Errorf("L2 raw = %q, want the number 1553.73", raw)
	}
	if typ, _ := x.GetCellType("Rows", "C2"); typ == excelize.CellTypeInlineString || typ == excelize.CellTypeSharedString {
		t.Errorf("invoice date is stored as text")
	}
}

func TestAuditEmptyAndBadFormat(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// A series-year that holds nothing is not found, never an empty "intact" audit.
	for _, format := range []string{reports.FormatCSV, reports.FormatJSON, reports.FormatXLSX} {
		var buf bytes.Buffer
		err := reports.WriteAudit(t.Context(), f.pool, f.seller, f.cn1, 2027, format, &buf)
		if !errors.Is(err, reports.ErrSeriesYearNotFound) || buf.Len() != 0 {
			t.Errorf("audit of an empty series-year (%s): %v, %d bytes written", format, err, buf.Len())
		}
		err = reports.WriteAuditSummary(t.Context(), f.pool, f.seller, f.cn1, 2027, format, &buf)
		if !errors.Is(err, reports.ErrSeriesYearNotFound) || buf.Len() != 0 {
			t.Errorf("summary of an empty series-year (%s): %v, %d bytes written", format, err, buf.Len())
		}
	}
	var buf bytes.Buffer
	err := reports.WriteAudit(t.Context(), f.pool, f.seller, f.ch1, 2026, "pdf", &buf)
	if !errors.Is(err, reports.ErrInvalidFormat) || buf.Len() != 0 {
		t.Errorf("format pdf: %v, %d bytes written", err, buf.Len())
	}
}

func TestAuditShowsLockedPeriods(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dbtest.SetClock(t, f.pool, clock) // October has ended by the database's clock too
	ctx := t.Context()
	lockOctober(t, f, "key ik_0a1b2c3d")
	sum, err := reports.AuditSummary(ctx, f.pool, f.seller, f.ch1, 2026)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.LockedPeriods) != 1 || sum.LockedPeriods[0].FP != "102026" || sum.LockedPeriods[0].LockedBy != "key ik_0a1b2c3d" {
		t.Fatalf("locked periods %+v", sum.LockedPeriods)
	}
	if sum, err := reports.AuditSummary(ctx, f.pool, f.seller, f.ch1, 2025); err != nil || len(sum.LockedPeriods) != 0 {
		t.Fatalf("2025-26 shows %+v (%v)", sum.LockedPeriods, err)
	}
	var buf bytes.Buffer
	if err := reports.WriteAuditSummary(ctx, f.pool, f.seller, f.ch1, 2026, reports.FormatCSV, &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Locked months (GSTR-1 filed),"+`"Oct 2026 (locked 1 Dec 2026, 09:30 IST by API key ik_0a1b2c3d)"`+"\r\n") {
		t.Fatalf("summary CSV:\n%s", buf.String())
	}
}

// The summary a person downloads (CSV, XLSX) speaks like the console: its
// words, not the audit's terms ("Counter drift", "Chain head", "Dated
// before predecessor"), dates and instants in IST as people write them
// (a month locked, a finding's dates), 0 for nothing, and the
// 64-character fingerprint last.
func TestAuditSummarySpeaksLikeTheConsole(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	lockOctober(t, f, "console key ik_0a1b2c3d")
	f.exec(t, `UPDATE invoices SET invoice_date = '2026-10-01' WHERE series_id = (SELECT id FROM series WHERE code = 'CH1') AND fy = 2026 AND serial = 4`)
	summary := func(format string) [][2]string {
		var buf bytes.Buffer
		if err := reports.WriteAuditSummary(ctx, f.pool, f.seller, f.ch1, 2026, format, &buf); err != nil {
			t.Fatal(err)
		}
		var out [][2]string
		var rows [][]string
		if format == reports.FormatXLSX {
			rows = xlsxRows(t, buf.Bytes(), "Summary")
		} else {
			rows = csvRecords(t, buf.Bytes())
		}
		for _, r := range rows[1:] {
			out = append(out, [2]string{r[0], r[1]})
		}
		return out
	}
	jargon := regexp.MustCompile(`(?i)counter drift|predecessor|chain head|last_serial|\bgaps?\b|\bnone\b|\d{4}-\d{2}-\d{2}|\b1 findings\b`)
	for _, format := range []string{reports.FormatCSV, reports.FormatXLSX} {
		lines := summary(format)
		got := map[string]string{}
		var text strings.Builder
		for _, l := range lines {
			got[l[0]] += l[1]
			fmt.Fprintf(&text, "%s: %s\n", l[0], l[1])
		}
		last := lines[len(lines)-1]
		for field, want := range map[string]string{
			"Verdict":                               "NOT intact: 2 findings",
			"Missing numbers":                       "0",
			"Dated earlier than the invoice before": "CH1/26-27/00004 dated 1 Oct 2026, after 2 Nov 2026",
			"Locked months (GSTR-1 filed)":          "Oct 2026 (locked 1 Dec 2026, 09:30 IST by API key ik_0a1b2c3d in the console)",
			"Tamper check":                          "broken at position 5",
			"Finding":                               "Dated earlier than the invoice before it at serial 4: ",
		} {
			if !strings.Contains(got[field], want) {
				t.Errorf("%s summary: %s = %q, want it to say %q\n%s", format, field, got[field], want, text.String())
			}
		}
		if m := jargon.FindString(text.String()); m != "" {
			t.Errorf("%s summary says %q:\n%s", format, m, text.String())
		}
		if last[0] != "Fingerprint of the year so far" || len(last[1]) != 64 {
			t.Errorf("%s summary ends with %q, not the fingerprint", format, last)
		}
	}
}
