package reports_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"slices"
	"testing"

	"github.com/invoiced/invoiced/reports"
	"github.com/xuri/excelize/v2"
)

// The three exports tell one story: CSV and XLSX have the same header,
// the same instants in IST with the offset written (the XLSX as date-time
// cells shown that way), the columns that were there before in their old
// places, and at the end the invoice's id in the API ("CH1-2026-2") and
// its public id (the receipt link), which the JSON rows carry too.
func TestAuditExportsShareTimeZoneAndCarryIDs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	before := []string{"Serial", "Number", "Invoice date", "Issued at (IST)", "Status", "Cancel reason", "Buyer GSTIN",
		"Taxable", "CGST", "SGST", "IGST", "Total", "Hash",
		"Buyer name", "Place of supply", "Original number", "Original date", "Cancelled at (IST)",
		"Issue position", "Cancel position", "Cancel hash"}
	want := append(slices.Clone(before), "ID", "Public ID")
	var publicID string
	if err := f.pool.QueryRow(context.Background(), `SELECT public_id FROM invoices WHERE number = 'CH1/26-27/00002'`).Scan(&publicID); err != nil {
		t.Fatal(err)
	}

	got := audit(t, f, f.ch1, 2026, reports.FormatCSV)
	recs, err := csv.NewReader(bytes.NewReader(got[3:])).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs[0], want) {
		t.Fatalf("CSV header %q\nwant %q", recs[0], want)
	}
	row2 := recs[2]
	if row2[3] != "2026-12-01T09:33:00.000000+05:30" || row2[17] != "2026-12-01T09:35:00.000000+05:30" || row2[21] != "CH1-2026-2" || row2[22] != publicID {
		t.Fatalf("CSV row of serial 2 = %q; want IST instants with +05:30, id CH1-2026-2 and public id %s", row2, publicID)
	}

	x, err := excelize.OpenReader(bytes.NewReader(audit(t, f, f.ch1, 2026, reports.FormatXLSX)))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rows, err := x.GetRows("Rows")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rows[0], want) {
		t.Fatalf("XLSX header %q\nwant %q", rows[0], want)
	}
	if r := rows[2]; r[3] != "2026-12-01T09:33:00+05:30" || r[17] != "2026-12-01T09:35:00+05:30" || r[21] != "CH1-2026-2" || r[22] != publicID {
		t.Fatalf("XLSX row of serial 2 = %q; want IST instants shown with +05:30, id CH1-2026-2 and public id %s", r, publicID)
	}
	if typ, _ := x.GetCellType("Rows", "D3"); typ == excelize.CellTypeInlineString || typ == excelize.CellTypeSharedString {
		t.Fatal("XLSX issued at is stored as text, not a date-time")
	}

	var doc struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(audit(t, f, f.ch1, 2026, reports.FormatJSON), &doc); err != nil {
		t.Fatal(err)
	}
	if r := doc.Rows[1]; r["id"] != "CH1-2026-2" || r["public_id"] != publicID {
		t.Fatalf("JSON row of serial 2 = %v; want id CH1-2026-2 and public id %s", r, publicID)
	}
}
