package reports_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/reports"
	"github.com/xuri/excelize/v2"
)

// The three exports tell one story: CSV and XLSX have the same header,
// the same instants in IST with the offset written (the XLSX as date-time
// cells shown that way), the invoice's id in the API ("CH1-2026-2") and
// its public id (the receipt link), which the JSON rows carry too, and
// the two 66-character hash columns last.
func TestAuditExportsShareTimeZoneAndCarryIDs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	want := []string{"Serial", "Number", "Invoice date", "Issued at (IST)", "Status", "Cancel reason", "Buyer GSTIN",
		"Taxable", "CGST", "SGST", "IGST", "Total",
		"Buyer name", "Place of supply", "Original number", "Original date", "Cancelled at (IST)",
		"Issue position", "Cancel position", "ID", "Public ID", "Buyer address", "Ship to", "IRN", "Ack No.", "Hash", "Cancel hash"}
	var publicID string
	if err := f.pool.QueryRow(t.Context(), `SELECT public_id FROM invoices WHERE number = 'CH1/26-27/00002'`).Scan(&publicID); err != nil {
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
	if row1 := recs[1]; row1[23] != "4b1c8b9a7e0f3d2c1b0a99887766554433221100ffeeddccbbaa998877665544" || row1[24] != "112610000000001" || recs[2][23] != "" {
		t.Fatalf("CSV rows 1 and 2: IRN %q, Ack No. %q, %q; want the registered invoice's, and none for an unregistered one", row1[23], row1[24], recs[2][23])
	}
	row2 := recs[2]
	if row2[3] != "2026-12-01T09:33:00.000000+05:30" || row2[16] != "2026-12-01T09:35:00.000000+05:30" || row2[19] != "CH1-2026-2" || row2[20] != publicID {
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
	if r := rows[2]; r[3] != "2026-12-01T09:33:00+05:30" || r[16] != "2026-12-01T09:35:00+05:30" || r[19] != "CH1-2026-2" || r[20] != publicID {
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

// The column table is the one list of columns: the CSV's and the XLSX's
// headers are its headers, every row of both has its number of cells, and
// the JSON rows carry its keys in its order (then the items), as Row's
// fields do.
func TestAuditColumnsAgree(t *testing.T) {
	t.Parallel()
	f := setup(t)
	headers, keys := reports.AuditColumns()
	if len(headers) != len(keys) || len(headers) == 0 {
		t.Fatalf("table has %d headers and %d JSON keys", len(headers), len(keys))
	}
	for _, s := range []gst.Series{f.ch1, f.cn1} {
		recs, err := csv.NewReader(bytes.NewReader(audit(t, f, s, 2026, reports.FormatCSV)[3:])).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(recs[0], headers) {
			t.Fatalf("%s: CSV header %q\nwant the table's %q", s.Code, recs[0], headers)
		}
		for i, rec := range recs {
			if len(rec) != len(headers) {
				t.Fatalf("%s: CSV record %d has %d fields; the table %d", s.Code, i, len(rec), len(headers))
			}
		}

		x, err := excelize.OpenReader(bytes.NewReader(audit(t, f, s, 2026, reports.FormatXLSX)))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := x.GetRows("Rows")
		x.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(recs) || !slices.Equal(rows[0], headers) {
			t.Fatalf("%s: XLSX has %d rows (CSV %d), header %q\nwant the table's %q", s.Code, len(rows), len(recs), rows[0], headers)
		}
		pub := slices.Index(headers, "Public ID") // never empty
		for i, r := range rows[1:] {
			if len(r) < pub || r[pub] != recs[i+1][pub] {
				t.Fatalf("%s: XLSX row %d = %q; want public id %q in cell %d", s.Code, i+1, r, recs[i+1][pub], pub)
			}
		}

		var doc struct {
			Rows []json.RawMessage `json:"rows"`
		}
		if err := json.Unmarshal(audit(t, f, s, 2026, reports.FormatJSON), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Rows) != len(recs)-1 {
			t.Fatalf("%s: JSON has %d rows, CSV %d", s.Code, len(doc.Rows), len(recs)-1)
		}
		for i, raw := range doc.Rows {
			if got, want := objectKeys(t, raw), append(slices.Clone(keys), "items"); !slices.Equal(got, want) {
				t.Fatalf("%s: JSON row %d has keys %q\nwant the table's %q", s.Code, i, got, want)
			}
		}
	}

	var fields []string
	rt := reflect.TypeFor[reports.Row]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if rt.Field(i).IsExported() && name != "-" && name != "items" {
			fields = append(fields, name)
		}
	}
	if !slices.Equal(fields, keys) {
		t.Fatalf("Row's JSON fields %q\nwant the table's keys %q", fields, keys)
	}
}

// objectKeys returns the keys of the JSON object raw, in order.
func objectKeys(t *testing.T, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("JSON row %s is not an object", raw)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}
