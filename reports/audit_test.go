package reports_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
	"github.com/xuri/excelize/v2"
)

func audit(t *testing.T, f fixture, s series.Series, fy series.FY, format string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := reports.WriteAudit(context.Background(), f.pool, f.seller, s, fy, format, &buf); err != nil {
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
	r := csv.NewReader(bytes.NewReader(got[3:]))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v", err)
	}
	// The summary block, then the header, then 6 rows.
	hdr := -1
	for i, rec := range recs {
		if rec[0] == "Serial" {
			hdr = i
		}
	}
	if hdr < 0 || len(recs)-hdr-1 != 6 {
		t.Fatalf("header at %d of %d records; want 6 rows after it", hdr, len(recs))
	}
	if recs[0][0] != "Field" || recs[1][1] != "27AAPFU0939F1ZV" {
		t.Errorf("summary starts %q, %q", recs[0], recs[1])
	}
	row2 := recs[hdr+2]
	if row2[1] != "CH1/26-27/00002" || row2[4] != "cancelled" || row2[5] != `Wrong buyer, "duplicate" entry` || len(row2[12]) != 64 {
		t.Errorf("row of serial 2 = %q", row2)
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
	csvOut := string(audit(t, f, f.ch1, 2026, reports.FormatCSV))
	for _, w := range []string{"Gaps,3; 7\r\n", "Chain,broken at position 3: ", "counter ahead by 1"} {
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
	if rows[1][2] != "2026-10-30" || rows[1][3] != "2026-12-01 09:32:00" || rows[1][11] != "1,553.73" || rows[1][10] != "98.75" {
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
	got := audit(t, f, f.cn1, 2027, reports.FormatJSON)
	var doc struct {
		Summary reports.Summary `json:"summary"`
		Rows    []reports.Row   `json:"rows"`
	}
	if err := json.Unmarshal(got, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Summary.Total != 0 || doc.Summary.Chain != "ok" || doc.Rows == nil || len(doc.Rows) != 0 {
		t.Errorf("empty audit = %s", got)
	}
	var buf bytes.Buffer
	err := reports.WriteAudit(context.Background(), f.pool, f.seller, f.ch1, 2026, "pdf", &buf)
	if !errors.Is(err, reports.ErrInvalidFormat) || buf.Len() != 0 {
		t.Errorf("format pdf: %v, %d bytes written", err, buf.Len())
	}
}
