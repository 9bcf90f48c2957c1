package reports_test

import (
	"bytes"
	"encoding/csv"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/xuri/excelize/v2"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixture is a seller with three series and a fixed history:
//
//	CH1 (invoice, CH1/{FY}/{SEQ:5})
//	  2025-26: serial 1 dated 2026-03-20                       position 1
//	  2026-27: serials 1..6; 2 cancelled after 3 was issued:
//	           issue 1, 2, 3 = positions 1, 2, 3; cancel 2 = position 4;
//	           issue 4, 5, 6 = positions 5, 6, 7
//	           1 dated 2026-10-30, 2-3 2026-11-02, 4 2026-11-15, 5-6 2026-11-28
//	CN1 (credit_note, CN/{FY}/{SEQ:4}): 2026-27 serial 1 dated 2026-11-20
//	B2  (bill_of_supply, BS/{FY}/{SEQ:4}): 2026-27 serials 1-2 dated 2026-11-05, 2026-12-01
type fixture struct {
	pool   *pgxpool.Pool
	seller gst.Seller
	ch1    gst.Series
	cn1    gst.Series
	b2     gst.Series
	invs   map[string]document.Invoice // by number
}

var clock = time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC) // 09:30 IST on 1 December 2026

func setup(t *testing.T) fixture {
	t.Helper()
	ctx := t.Context()
	pool := dbtest.New(t)
	seller := testfactory.Seller(t, pool, nil)
	f := fixture{pool: pool, seller: seller, invs: map[string]document.Invoice{}}
	mk := func(code, docType, format string) gst.Series {
		return testfactory.Series(t, pool, seller, &testfactory.SeriesOpts{Code: code, DocType: docType, Format: format})
	}
	f.ch1 = mk("CH1", "invoice", "CH1/{FY}/{SEQ:5}")
	f.cn1 = mk("CN1", "credit_note", "CN/{FY}/{SEQ:4}")
	f.b2 = mk("B2", "bill_of_supply", "BS/{FY}/{SEQ:4}")

	// On Citus (make test-citus) the writes take their routed form, as
	// invoiced serve's do there (series.Options.Routed).
	opt := series.Options{Routed: dbtest.Citus(t)}
	minute := 0
	var shipTo *document.ShipTo // of the next issue
	issue := func(s gst.Series, date string, buyer *document.Buyer, orig *document.Original) document.Invoice {
		t.Helper()
		minute++
		now := clock.Add(time.Duration(minute) * time.Minute)
		req := document.Request{InvoiceDate: day(date), Buyer: buyer, ShipTo: shipTo, Original: orig, PlaceOfSupply: pos(buyer), Items: []document.ItemInput{
			{Description: "Masala chai, 250 g", HSN: "0902", Quantity: "10", UnitPrice: "125.50", GSTRate: "5"},
			{Description: "Steel tumbler", HSN: "7323", Quantity: "2", UnitPrice: "99.99", GSTRate: "18"},
		}}
		d, err := document.Prepare(req, seller, s, now, document.Policy{BackdateDays: 400})
		if err != nil {
			t.Fatalf("prepare %s %s: %v", s.Code, date, err)
		}
		inv, err := invoice.Issue(ctx, pool, seller, s, d, now, opt)
		if err != nil {
			t.Fatalf("issue %s %s: %v", s.Code, date, err)
		}
		f.invs[inv.Number] = inv
		return inv
	}
	cancel := func(inv document.Invoice, reason string) {
		t.Helper()
		minute++
		if _, err := invoice.Cancel(ctx, pool, seller, inv.ID, reason, clock.Add(time.Duration(minute)*time.Minute), opt); err != nil {
			t.Fatalf("cancel %s: %v", inv.Number, err)
		}
	}
	karnataka := &document.Buyer{GSTIN: "29AAGCB7383J1Z4", Name: "Bengaluru Traders",
		Address: &document.Address{Line1: "14 Residency Road", Line2: "Shanthala Nagar", City: "Bengaluru", PIN: "560025"}}
	issue(f.ch1, "2026-03-20", nil, nil)
	first := issue(f.ch1, "2026-10-30", karnataka, nil)
	// Its registration at the IRP, as the IRP workers record it
	// (einvoice/registration): the audit carries the IRN and Ack No.
	if _, err := pool.Exec(ctx, `INSERT INTO e_invoices (invoice_id, seller_id, status, irn, ack_no, ack_date)
		VALUES ($1, $2, 'registered', $3, '112610000000001', $4)`, first.ID, seller.ID,
		"4b1c8b9a7e0f3d2c1b0a99887766554433221100ffeeddccbbaa998877665544", clock); err != nil {
		t.Fatal(err)
	}
	second := issue(f.ch1, "2026-11-02", nil, nil)
	issue(f.ch1, "2026-11-02", &document.Buyer{Name: "Śrī Stores, Kothrud"}, nil)
	cancel(second, `Wrong buyer, "duplicate" entry`)
	issue(f.ch1, "2026-11-15", nil, nil)
	shipTo = &document.ShipTo{Name: "Bengaluru Traders, godown", Address: document.Address{Line1: "Plot 7, KIADB", City: "Hoskote", PIN: "562114", State: "29"}}
	issue(f.ch1, "2026-11-28", karnataka, nil)
	shipTo = nil
	issue(f.ch1, "2026-11-28", nil, nil)
	issue(f.cn1, "2026-11-20", karnataka, &document.Original{Number: first.Number, InvoiceDate: first.InvoiceDate})
	issue(f.b2, "2026-11-05", nil, nil)
	issue(f.b2, "2026-12-01", nil, nil)
	// Public ids hold random bits; fixed ones (in the legacy form, unique
	// by issue minute) keep the golden exports byte for byte.
	// The ids are computed here, not by SQL: Citus refuses an UPDATE that
	// calls a STABLE function (to_char of a timestamptz) on a column.
	rows, err := f.pool.Query(t.Context(), `SELECT id, seller_id, issued_at FROM invoices`)
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	for rows.Next() {
		var id, seller int64
		var at time.Time
		if err := rows.Scan(&id, &seller, &at); err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, fmt.Sprintf(`UPDATE invoices SET public_id = 'golden%s' WHERE seller_id = %d AND id = %d`,
			at.UTC().Format("20060102150405"), seller, id))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	f.exec(t, stmts...)
	return f
}

// pos returns the buyer's state as the place of supply ("" = the seller's).
func pos(b *document.Buyer) string {
	if b == nil || b.GSTIN == "" {
		return ""
	}
	return b.GSTIN[:2]
}

func day(s string) time.Time {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return d
}

// exec runs statements in one transaction with foreign keys and triggers
// off (session_replication_role = replica), as a DBA tampering would.
func (f fixture) exec(t *testing.T, stmts ...string) {
	t.Helper()
	ctx := t.Context()
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./reports -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./reports -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// csvRecords returns the records of the CSV export b (its BOM dropped),
// failing t when it does not parse as one table.
func csvRecords(t *testing.T, b []byte) [][]string {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(b, []byte("\xEF\xBB\xBF")))).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse as one table: %v", err)
	}
	return recs
}

// xlsxRows returns the rows of sheet of the XLSX export b, failing t when
// it does not open or has no such sheet.
func xlsxRows(t *testing.T, b []byte, sheet string) [][]string {
	t.Helper()
	x, err := excelize.OpenReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rows, err := x.GetRows(sheet)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// lockOctober locks October 2026 for f's seller at clock, as by.
func lockOctober(t *testing.T, f fixture, by string) {
	t.Helper()
	oct, _ := document.ParseMonth("102026")
	if _, _, err := invoice.LockPeriod(t.Context(), f.pool, f.seller, oct, by, clock); err != nil {
		t.Fatal(err)
	}
}
