package reports_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
)

// This file recomputes a series-year's chain from its JSON audit export
// alone, as a third party would, following docs/chain.md ("Recomputing a
// series-year from the JSON export") and nothing in the invoice package.

// exportDoc is the JSON audit as a third party reads it.
type exportDoc struct {
	Summary struct {
		SellerGSTIN string `json:"seller_gstin"`
		Series      string `json:"series"`
		DocType     string `json:"doc_type"`
		FY          string `json:"fy"`
		ChainLength int64  `json:"chain_length"`
		ChainHead   string `json:"chain_head"`
		Opening     *struct {
			LastSerial      int64  `json:"last_serial"`
			LastNumber      string `json:"last_number"`
			LastInvoiceDate string `json:"last_invoice_date"`
			DeclaredAt      string `json:"declared_at"`
			DeclaredBy      string `json:"declared_by"`
			Position        int64  `json:"position"`
			Hash            string `json:"hash"`
		} `json:"opening"`
	} `json:"summary"`
	Rows []map[string]any `json:"rows"`
}

// pct percent-encodes s as docs/chain.md says: bytes A-Z a-z 0-9 - . _ ~
// stay, every other byte becomes %XX in upper-case hex.
func pct(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// recomputeChain rebuilds every record of the export in position order and
// returns the problems found: a record whose recomputed hash differs from
// the exported one, a missing position, or a head that differs.
func recomputeChain(doc exportDoc) []string {
	type rec struct {
		row    map[string]any
		kind   string
		stored string
	}
	str := func(row map[string]any, k string) string { s, _ := row[k].(string); return s }
	byPos := map[int64]rec{}
	for _, row := range doc.Rows {
		byPos[int64(row["issue_position"].(float64))] = rec{row, "issue", str(row, "hash")}
		if p := int64(row["cancel_position"].(float64)); p > 0 {
			byPos[p] = rec{row, "cancel", str(row, "cancel_hash")}
		}
	}
	if o := doc.Summary.Opening; o != nil {
		// The opening record: no buyer, items or amounts (0.00).
		byPos[o.Position] = rec{map[string]any{
			"serial": float64(o.LastSerial), "number": o.LastNumber, "invoice_date": o.LastInvoiceDate,
			"issued_at": o.DeclaredAt, "cancelled_at": o.DeclaredAt, "cancel_reason": "declared by " + o.DeclaredBy,
			"taxable": "0.00", "cgst": "0.00", "sgst": "0.00", "igst": "0.00", "total": "0.00", "items": []any{},
		}, "opening", o.Hash}
	}
	positions := make([]int64, 0, len(byPos))
	for p := range byPos {
		positions = append(positions, p)
	}
	sort.Slice(positions, func(i, j int) bool { return positions[i] < positions[j] })
	var problems []string
	prev := ""
	for i, p := range positions {
		if p != int64(i+1) {
			problems = append(problems, fmt.Sprintf("position %d missing", i+1))
			break
		}
		r := byPos[p]
		row := r.row
		recordedAt, reason := str(row, "issued_at"), ""
		if r.kind == "cancel" || r.kind == "opening" {
			recordedAt, reason = str(row, "cancelled_at"), str(row, "cancel_reason")
		}
		var items []string
		for _, it := range row["items"].([]any) {
			m := it.(map[string]any)
			var f []string
			for _, k := range []string{"description", "hsn", "quantity", "unit_price", "gst_rate", "taxable", "cgst", "sgst", "igst", "total"} {
				f = append(f, pct(str(m, k)))
			}
			items = append(items, strings.Join(f, ","))
		}
		// Version 2 when the row has either address, sealing both.
		address := func(k string, parts ...string) string {
			m, _ := row[k].(map[string]any)
			if m == nil {
				return ""
			}
			var f []string
			for _, part := range parts {
				f = append(f, pct(str(m, part)))
			}
			return strings.Join(f, ",")
		}
		version, buyerAddress, shipTo := "1", address("buyer_address", "line1", "line2", "city", "pin", "state"),
			address("ship_to", "name", "line1", "line2", "city", "pin", "state")
		if row["buyer_address"] != nil || row["ship_to"] != nil {
			version = "2"
		}
		fields := [][2]string{
			{"v", version}, {"gstin", doc.Summary.SellerGSTIN}, {"fy", doc.Summary.FY}, {"series", doc.Summary.Series},
			{"doc_type", doc.Summary.DocType}, {"position", fmt.Sprint(p)}, {"kind", r.kind},
			{"serial", fmt.Sprint(int64(row["serial"].(float64)))}, {"number", str(row, "number")},
			{"invoice_date", str(row, "invoice_date")}, {"issued_at", str(row, "issued_at")}, {"recorded_at", recordedAt},
			{"buyer_gstin", str(row, "buyer_gstin")}, {"buyer_name", str(row, "buyer_name")},
		}
		if version == "2" {
			fields = append(fields, [2]string{"buyer_address", buyerAddress}, [2]string{"ship_to", shipTo})
		}
		fields = append(fields, [][2]string{
			{"place_of_supply", str(row, "place_of_supply")}, {"original_number", str(row, "original_number")},
			{"original_date", str(row, "original_date")}, {"items", strings.Join(items, ";")},
			{"taxable", str(row, "taxable")}, {"cgst", str(row, "cgst")}, {"sgst", str(row, "sgst")},
			{"igst", str(row, "igst")}, {"total", str(row, "total")}, {"reason", reason},
		}...)
		var parts []string
		for _, f := range fields {
			parts = append(parts, f[0]+"="+pct(f[1]))
		}
		parts = append(parts, "prev="+prev) // hex needs no encoding
		sum := sha256.Sum256([]byte(strings.Join(parts, "&")))
		got := hex.EncodeToString(sum[:])
		if got != r.stored {
			problems = append(problems, fmt.Sprintf("position %d (%s of %s): recomputed %s, exported %s", p, r.kind, str(row, "number"), got, r.stored))
		}
		prev = r.stored
	}
	if int64(len(positions)) != doc.Summary.ChainLength {
		problems = append(problems, fmt.Sprintf("%d records, chain_length %d", len(positions), doc.Summary.ChainLength))
	}
	if prev != doc.Summary.ChainHead {
		problems = append(problems, fmt.Sprintf("last record %s, chain_head %s", prev, doc.Summary.ChainHead))
	}
	return problems
}

func TestChainRecomputedFromJSONExport(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, tc := range []struct {
		name string
		doc  []byte
	}{
		{"CH1 2026-27 (a cancellation, a UTF-8 name)", audit(t, f, f.ch1, 2026, reports.FormatJSON)},
		{"CN1 2026-27 (a credit note and its original)", audit(t, f, f.cn1, 2026, reports.FormatJSON)},
		{"CH1 2025-26", audit(t, f, f.ch1, 2025, reports.FormatJSON)},
	} {
		var doc exportDoc
		if err := json.Unmarshal(tc.doc, &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Summary.ChainHead) != 64 || doc.Summary.ChainLength == 0 {
			t.Fatalf("%s: summary has no chain head: %+v", tc.name, doc.Summary)
		}
		if p := recomputeChain(doc); len(p) > 0 {
			t.Errorf("%s: the export does not recompute:\n%s", tc.name, strings.Join(p, "\n"))
		}
		// The recomputation sees an edit of any sealed field in the export.
		for _, field := range []string{"total", "buyer_name", "place_of_supply", "original_date", "cancelled_at", "items", "buyer_address", "ship_to"} {
			var edited exportDoc
			if err := json.Unmarshal(tc.doc, &edited); err != nil {
				t.Fatal(err)
			}
			row := edited.Rows[0]
			if field == "cancelled_at" {
				row = nil
				for _, r := range edited.Rows {
					if r["cancel_position"].(float64) > 0 {
						row = r
					}
				}
				if row == nil {
					continue
				}
			}
			if field == "buyer_address" || field == "ship_to" {
				row = nil // a row with the address: edit a part of it
				for _, r := range edited.Rows {
					if r[field] != nil {
						row = r
					}
				}
				if row == nil {
					continue
				}
			}
			switch field {
			case "items":
				row["items"].([]any)[0].(map[string]any)["hsn"] = "0903"
			case "buyer_address", "ship_to":
				row[field].(map[string]any)["pin"] = "560001"
			default:
				row[field] = fmt.Sprint(row[field], "x")
			}
			if p := recomputeChain(edited); len(p) == 0 {
				t.Errorf("%s: editing %s in the export goes unnoticed", tc.name, field)
			}
		}
	}
}

// TestChainWithOpeningRecomputedFromJSONExport: a series moved here
// mid-year (an opening declared) recomputes from its export too, the
// declaration sealed in the first record.
func TestChainWithOpeningRecomputedFromJSONExport(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	s, err := series.CreateSeries(ctx, f.pool, series.NewSeries{SellerID: f.seller.ID, Code: "MV", DocType: "invoice", Format: "MV/{FY}/{SEQ:5}"})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	op := invoice.Opening{FY: 2026, LastSerial: 1233, LastInvoiceDate: day("2026-11-15"), LastNumber: "MV/26-27/01233"}
	if _, err := invoice.DeclareOpeningTx(ctx, tx, f.seller, s, op, "cli", clock); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i, date := range []string{"2026-11-15", "2026-11-20"} {
		d, err := document.Prepare(document.Request{InvoiceDate: day(date), Buyer: &document.Buyer{Name: "Ravi"}, Items: []document.ItemInput{
			{Description: "Ginger chai", HSN: "0902", Quantity: "3", UnitPrice: "40", GSTRate: "5"}}}, f.seller, s, clock, document.Policy{BackdateDays: 60})
		if err != nil {
			t.Fatal(err)
		}
		inv, err := invoice.Issue(ctx, f.pool, f.seller, s, d, clock.Add(time.Duration(i+1)*time.Minute), series.Options{Routed: dbtest.Citus(t)})
		if err != nil || inv.Serial != 1234+int64(i) {
			t.Fatalf("issue after the opening: %+v, %v", inv, err)
		}
		if i == 0 {
			if _, err := invoice.Cancel(ctx, f.pool, f.seller, inv.ID, "wrong item", clock.Add(5*time.Minute), series.Options{Routed: dbtest.Citus(t)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	raw := audit(t, f, s, 2026, reports.FormatJSON)
	var doc exportDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Summary.Opening == nil || doc.Summary.ChainLength != 4 {
		t.Fatalf("summary: %s", raw)
	}
	if p := recomputeChain(doc); len(p) > 0 {
		t.Fatalf("the export with an opening does not recompute:\n%s", strings.Join(p, "\n"))
	}
	doc.Summary.Opening.LastNumber = "MV/26-27/01200"
	if p := recomputeChain(doc); len(p) == 0 {
		t.Fatal("an edited declaration in the export goes unnoticed")
	}
	// Table 13: the declared serials are noted, not counted, and are no gap.
	nov, _ := reports.ParsePeriod("112026")
	rep13, err := reports.DocIssue(ctx, f.pool, f.seller, nov)
	if err != nil || len(rep13.Warnings) != 0 || len(rep13.Declared) != 1 || !strings.Contains(rep13.Declared[0], "series MV 2026-27: serials 1 to 1233 (up to MV/26-27/01233") {
		t.Fatalf("Table 13 for November: %+v, %v", rep13, err)
	}
	found := false
	for _, d := range rep13.DocIssue.DocDet {
		for _, doc := range d.Docs {
			if doc.From == "MV/26-27/01234" && doc.To == "MV/26-27/01235" && doc.TotNum == 2 && doc.Cancel == 1 {
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("Table 13 lacks MV 1234-1235: %+v", rep13.DocIssue)
	}
	dec, _ := reports.ParsePeriod("122026")
	if rep13, err := reports.DocIssue(ctx, f.pool, f.seller, dec); err != nil || len(rep13.Declared) != 0 {
		t.Fatalf("Table 13 for December notes %v (%v)", rep13.Declared, err)
	}
	// verify: intact, no gap for 1..1233; an edited declaration breaks position 1.
	rep, err := reports.Verify(ctx, f.pool, f.seller, "MV", 2026)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v\n%s", err, strings.Join(findingLines(rep), "\n"))
	}
	// An invoice dated before the declared date falls among the declared serials.
	f.exec(t, `UPDATE invoices SET invoice_date = '2026-11-10' WHERE series_id = `+strconv.FormatInt(s.ID, 10)+` AND serial = 1235`)
	rep, err = reports.Verify(ctx, f.pool, f.seller, "MV", 2026)
	if err != nil || !hasFinding(rep, want{reports.DeclaredSerial, "MV", "2026-27", 0, 1235}) {
		t.Fatalf("verify with an invoice dated before the declaration: %v\n%s", err, strings.Join(findingLines(rep), "\n"))
	}
	f.exec(t, `UPDATE invoices SET invoice_date = '2026-11-20' WHERE series_id = `+strconv.FormatInt(s.ID, 10)+` AND serial = 1235`)
	f.exec(t, `UPDATE series_openings SET last_serial = 1200, last_number = 'MV/26-27/01200'`)
	rep, err = reports.Verify(ctx, f.pool, f.seller, "MV", 2026)
	if err != nil || rep.OK() || rep.Chains[0].Findings[0].Kind != reports.OpeningMismatch || rep.Chains[0].Findings[0].Position != 1 {
		t.Fatalf("verify after editing the declaration: %v\n%s", err, strings.Join(findingLines(rep), "\n"))
	}
}
