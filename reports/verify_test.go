package reports_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
)

func TestVerifyIntact(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rep, err := reports.Verify(t.Context(), f.pool, f.seller, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("intact data does not verify:\n%s", strings.Join(findingLines(rep), "\n"))
	}
	var got []string
	for _, c := range rep.Chains {
		got = append(got, fmt.Sprintf("%s %s: %d invoices, %d cancelled, %d records, %s", c.Series, c.FY, c.Invoices, c.Cancelled, c.Records, c.Verdict()))
	}
	want := []string{
		"B2 2026-27: 2 invoices, 0 cancelled, 2 records, ok",
		"CH1 2025-26: 1 invoices, 0 cancelled, 1 records, ok",
		"CH1 2026-27: 6 invoices, 1 cancelled, 7 records, ok",
		"CN1 2026-27: 1 invoices, 0 cancelled, 1 records, ok",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("chains:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Filters narrow the set; an unknown series is ErrNotFound.
	rep, err = reports.Verify(t.Context(), f.pool, f.seller, "ch1", 2025)
	if err != nil || len(rep.Chains) != 1 || rep.Chains[0].Series != "CH1" || rep.Chains[0].FY != 2025 {
		t.Errorf("Verify(ch1, 2025) = %+v, %v; want the one chain CH1 2025-26", rep.Chains, err)
	}
	rep, err = reports.Verify(t.Context(), f.pool, f.seller, "", 2026)
	if err != nil || len(rep.Chains) != 3 {
		t.Errorf("Verify(all, 2026) gave %d chains, %v; want 3", len(rep.Chains), err)
	}
	if _, err := reports.Verify(t.Context(), f.pool, f.seller, "NOPE", 0); !errors.Is(err, series.ErrNotFound) {
		t.Errorf("Verify(NOPE) error = %v, want series.ErrNotFound", err)
	}
	// Filters that select no series-year say so, never "intact".
	for _, tc := range []struct {
		code string
		fy   gst.FY
	}{{"CN1", 2025}, {"", 2030}} {
		if rep, err := reports.Verify(t.Context(), f.pool, f.seller, tc.code, tc.fy); !errors.Is(err, reports.ErrSeriesYearNotFound) {
			t.Errorf("Verify(%q, %s) = %d chains, %v; want ErrSeriesYearNotFound", tc.code, tc.fy, len(rep.Chains), err)
		}
	}
}

// want is a finding a tamper test expects: kind, series, year, position
// and serial (0 = not located there).
type want struct {
	kind     reports.FindingKind
	series   string
	fy       string
	position int64
	serial   int64
}

func TestVerifyCatchesTampering(t *testing.T) {
	t.Parallel()
	const ch1 = `series_id = (SELECT id FROM series WHERE code = 'CH1') AND fy = 2026`
	cases := []struct {
		name  string
		sql   []string
		wants []want
	}{
		{"edited amount", []string{`UPDATE invoices SET total = total + 1000 WHERE ` + ch1 + ` AND serial = 3`},
			[]want{{reports.HashMismatch, "CH1", "2026-27", 3, 3}}},
		{"edited cancel reason", []string{`UPDATE invoices SET cancel_reason = 'customer asked' WHERE ` + ch1 + ` AND serial = 2`},
			[]want{{reports.HashMismatch, "CH1", "2026-27", 4, 2}}},
		{"edited line item", []string{`UPDATE invoices SET items = jsonb_set(items, '{0,description}', '"Ginger chai"') WHERE ` + ch1 + ` AND serial = 3`},
			[]want{{reports.HashMismatch, "CH1", "2026-27", 3, 3}}},
		{"edited place of supply", []string{`UPDATE invoices SET place_of_supply = '07' WHERE ` + ch1 + ` AND serial = 3`},
			[]want{{reports.HashMismatch, "CH1", "2026-27", 3, 3}}},
		{"edited buyer", []string{`UPDATE invoices SET buyer_gstin = NULL WHERE ` + ch1 + ` AND serial = 1`},
			[]want{{reports.HashMismatch, "CH1", "2026-27", 1, 1}}},
		{"deleted invoice with its chain records", []string{
			`DELETE FROM chain_records WHERE ` + ch1 + ` AND serial = 5`,
			`DELETE FROM invoices WHERE ` + ch1 + ` AND serial = 5`},
			[]want{{reports.SerialGap, "CH1", "2026-27", 0, 5}, {reports.RecordMissing, "CH1", "2026-27", 6, 0}}},
		{"deleted invoice row only (gap)", []string{`DELETE FROM invoices WHERE ` + ch1 + ` AND serial = 3`},
			[]want{{reports.SerialGap, "CH1", "2026-27", 0, 3}, {reports.InvoiceMissing, "CH1", "2026-27", 3, 3}}},
		{"deleted chain record only", []string{`DELETE FROM chain_records WHERE ` + ch1 + ` AND position = 3`},
			[]want{{reports.RecordMissing, "CH1", "2026-27", 3, 0}, {reports.IssueRecordMissing, "CH1", "2026-27", 0, 3}}},
		{"deleted cancel record", []string{`DELETE FROM chain_records WHERE ` + ch1 + ` AND kind = 'cancel'`},
			[]want{{reports.RecordMissing, "CH1", "2026-27", 4, 0}, {reports.CancelRecordMissing, "CH1", "2026-27", 0, 2}}},
		{"un-cancelled", []string{`UPDATE invoices SET status = 'issued' WHERE ` + ch1 + ` AND serial = 2`},
			[]want{{reports.CancelRecordUnexpected, "CH1", "2026-27", 0, 2}}},
		{"deleted last invoice", []string{
			`DELETE FROM chain_records WHERE ` + ch1 + ` AND serial = 6`,
			`DELETE FROM invoices WHERE ` + ch1 + ` AND serial = 6`},
			[]want{{reports.CounterAhead, "CH1", "2026-27", 0, 6}, {reports.SerialGap, "CH1", "2026-27", 0, 6},
				{reports.ChainLengthMismatch, "CH1", "2026-27", 0, 0}, {reports.ChainHeadMismatch, "CH1", "2026-27", 6, 0}}},
		{"reordered date", []string{`UPDATE invoices SET invoice_date = '2026-11-01' WHERE ` + ch1 + ` AND serial = 4`},
			[]want{{reports.DateOrder, "CH1", "2026-27", 0, 4}, {reports.HashMismatch, "CH1", "2026-27", 5, 4}}},
		{"duplicate serial and number", []string{
			`ALTER TABLE invoices DROP CONSTRAINT invoices_series_id_fy_serial_key CASCADE`,
			`ALTER TABLE invoices DROP CONSTRAINT invoices_seller_id_fy_number_key`,
			`INSERT INTO invoices (seller_id, series_id, fy, serial, number, invoice_date, issued_at, public_id, status,
				place_of_supply, items, taxable, cgst, sgst, igst, total)
			 SELECT seller_id, series_id, fy, serial, number, invoice_date, issued_at, 'forged', status,
				place_of_supply, items, 1, 0, 0, 0, 1 FROM invoices WHERE ` + ch1 + ` AND serial = 4`},
			[]want{{reports.DuplicateSerial, "CH1", "2026-27", 0, 4}, {reports.DuplicateNumberKind, "CH1", "2026-27", 0, 4}}},
		{"counter ahead", []string{`UPDATE series_counters SET last_serial = last_serial + 2 WHERE ` + ch1},
			[]want{{reports.CounterAhead, "CH1", "2026-27", 0, 7}, {reports.SerialGap, "CH1", "2026-27", 0, 7}}},
		{"counter behind", []string{`UPDATE series_counters SET last_serial = last_serial - 1 WHERE ` + ch1},
			[]want{{reports.CounterBehind, "CH1", "2026-27", 0, 6}}},
		{"head mismatch", []string{`UPDATE series_counters SET chain_head = sha256('forged') WHERE ` + ch1},
			[]want{{reports.ChainHeadMismatch, "CH1", "2026-27", 7, 0}}},
		{"chain length mismatch", []string{`UPDATE series_counters SET chain_length = 6 WHERE ` + ch1},
			[]want{{reports.ChainLengthMismatch, "CH1", "2026-27", 0, 0}}},
		{"edited record hash", []string{`UPDATE chain_records SET hash = sha256('x') WHERE ` + ch1 + ` AND position = 5`},
			[]want{{reports.HashMismatch, "CH1", "2026-27", 5, 4}, {reports.HashMismatch, "CH1", "2026-27", 6, 5}}},
		{"edited number", []string{`UPDATE invoices SET number = 'CH1/26-27/00099' WHERE ` + ch1 + ` AND serial = 6`},
			[]want{{reports.NumberMismatch, "CH1", "2026-27", 0, 6}, {reports.HashMismatch, "CH1", "2026-27", 7, 6}}},
		{"edited in the other year", []string{`UPDATE invoices SET taxable = 1 WHERE series_id = (SELECT id FROM series WHERE code = 'CH1') AND fy = 2025`},
			[]want{{reports.HashMismatch, "CH1", "2025-26", 1, 1}}},
		// The record's time is sealed in its hash, which verify rebuilds
		// from the invoice's time: only the comparison of the two finds
		// an edited recorded_at.
		// The edit in UTC: timestamptz + interval is STABLE, which Citus
		// refuses in an UPDATE with column references.
		{"edited recorded_at", []string{`UPDATE chain_records SET recorded_at = ((recorded_at AT TIME ZONE 'UTC') + interval '1 second') AT TIME ZONE 'UTC' WHERE ` + ch1 + ` AND position = 5`},
			[]want{{reports.RecordedAtMismatch, "CH1", "2026-27", 5, 4}}},
		{"dated outside its year", []string{`UPDATE invoices SET invoice_date = '2027-04-02' WHERE ` + ch1 + ` AND serial = 6`},
			[]want{{reports.DateOutsideFY, "CH1", "2026-27", 0, 6}}},
		{"swapped issue records", []string{
			`UPDATE chain_records SET position = 1000 WHERE ` + ch1 + ` AND position = 5`,
			`UPDATE chain_records SET position = 5 WHERE ` + ch1 + ` AND position = 6`,
			`UPDATE chain_records SET position = 6 WHERE ` + ch1 + ` AND position = 1000`},
			[]want{{reports.RecordOrder, "CH1", "2026-27", 6, 4}}},
		{"cancel record before its issue record", []string{
			`UPDATE chain_records SET position = 1000 WHERE ` + ch1 + ` AND position = 2`,
			`UPDATE chain_records SET position = 2 WHERE ` + ch1 + ` AND position = 4`,
			`UPDATE chain_records SET position = 4 WHERE ` + ch1 + ` AND position = 1000`},
			[]want{{reports.RecordOrder, "CH1", "2026-27", 2, 2}}},
		{"duplicated issue record", []string{
			`INSERT INTO chain_records (seller_id, series_id, fy, position, kind, serial, recorded_at, hash)
			 SELECT seller_id, series_id, fy, 8, kind, serial, recorded_at, hash FROM chain_records WHERE ` + ch1 + ` AND position = 3`},
			[]want{{reports.IssueRecordDuplicate, "CH1", "2026-27", 0, 3}}},
		{"deleted counter row", []string{
			// The invoices' key to their counter row refuses the delete;
			// a tamperer with the rights to drop it goes first.
			`ALTER TABLE invoices DROP CONSTRAINT invoices_counter_fkey`,
			`DELETE FROM series_counters WHERE series_id = (SELECT id FROM series WHERE code = 'CN1')`},
			[]want{{reports.CounterMissing, "CN1", "2026-27", 0, 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.exec(t, tc.sql...)
			rep, err := reports.Verify(t.Context(), f.pool, f.seller, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			lines := findingLines(rep)
			t.Logf("findings:\n%s", strings.Join(lines, "\n"))
			if rep.OK() {
				t.Fatal("tampered data verifies OK")
			}
			for _, w := range tc.wants {
				if !hasFinding(rep, w) {
					t.Errorf("no finding %+v", w)
				}
			}
			// Only the tampered series-year is reported.
			for _, c := range rep.Chains {
				tampered := c.Series == tc.wants[0].series && c.FY.String() == tc.wants[0].fy
				if !tampered && !c.OK() {
					t.Errorf("untouched %s %s reports %v", c.Series, c.FY, c.Findings)
				}
			}
		})
	}
}

func hasFinding(rep reports.VerifyReport, w want) bool {
	for _, f := range rep.Findings() {
		if f.Kind == w.kind && f.Series == w.series && f.FY == w.fy &&
			(w.position == 0 || f.Position == w.position) && (w.serial == 0 || f.Serial == w.serial) {
			return true
		}
	}
	return false
}

func findingLines(rep reports.VerifyReport) []string {
	var out []string
	for _, f := range rep.Findings() {
		out = append(out, f.String())
	}
	return out
}
