package reports_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/invoiced/invoiced/reports"
)

func TestParsePeriod(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, from, to, fp string }{
		{"112026", "2026-11-01", "2026-11-30", "112026"},
		{"022027", "2027-02-01", "2027-02-28", "022027"},
		{"042026-062026", "2026-04-01", "2026-06-30", "062026"},
		{"2026-27-Q1", "2026-04-01", "2026-06-30", "062026"},
		{"2026-27-q3", "2026-10-01", "2026-12-31", "122026"},
		{"2026-27-Q4", "2027-01-01", "2027-03-31", "032027"},
	} {
		p, err := reports.ParsePeriod(tc.in)
		if err != nil {
			t.Errorf("ParsePeriod(%q): %v", tc.in, err)
			continue
		}
		if got := p.FirstDay().Format("2006-01-02"); got != tc.from {
			t.Errorf("ParsePeriod(%q) first day %s, want %s", tc.in, got, tc.from)
		}
		if got := p.LastDay().Format("2006-01-02"); got != tc.to {
			t.Errorf("ParsePeriod(%q) last day %s, want %s", tc.in, got, tc.to)
		}
		if p.FP() != tc.fp {
			t.Errorf("ParsePeriod(%q).FP() = %s, want %s", tc.in, p.FP(), tc.fp)
		}
	}
	for _, in := range []string{"", "13026", "132026", "002026", "11-2026", "062026-042026", "022026-052026",
		"2026-28-Q1", "2026-27-Q5", "2026-27Q1", "112010", "1120261"} {
		if _, err := reports.ParsePeriod(in); !errors.Is(err, reports.ErrInvalidPeriod) {
			t.Errorf("ParsePeriod(%q) error = %v, want ErrInvalidPeriod", in, err)
		}
	}
}

func TestDocIssueGolden(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, tc := range []struct{ period, file string }{
		{"112026", "gstr1_doc_issue_112026.json"},
		{"2026-27-Q3", "gstr1_doc_issue_2026-27-Q3.json"},
		{"2025-26-Q4", "gstr1_doc_issue_2025-26-Q4.json"},
		{"052026", "gstr1_doc_issue_052026.json"},
	} {
		p, err := reports.ParsePeriod(tc.period)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := reports.DocIssue(t.Context(), f.pool, f.seller, p)
		if err != nil {
			t.Fatalf("DocIssue(%s): %v", tc.period, err)
		}
		if len(rep.Warnings) > 0 {
			t.Errorf("DocIssue(%s) warnings: %q", tc.period, rep.Warnings)
		}
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		golden(t, tc.file, append(b, '\n'))
	}
}

func TestDocIssueWarnsOnGap(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.exec(t, `DELETE FROM invoices WHERE series_id = (SELECT id FROM series WHERE code = 'CH1') AND fy = 2026 AND serial = 3`)
	p, _ := reports.ParsePeriod("112026")
	rep, err := reports.DocIssue(t.Context(), f.pool, f.seller, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 1 {
		t.Errorf("warnings = %q, want one about CH1", rep.Warnings)
	}
}
