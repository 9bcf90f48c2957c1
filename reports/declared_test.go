package reports_test

import (
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/lease"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
)

// TestSettledLeaseReadsIntactWithDeclaredSerials: docs/offline.md's
// procedure for a lost till (the lease ended by force, then settled through
// the last serial on its paper roll) leaves the year intact: verify and the
// audit list serials 2-4 as declared, not as a gap with the counter ahead;
// the next online number is 5; GSTR-1 Table 13 counts 1 to 4, the three
// declared ones as cancelled. A declaration deleted or edited afterwards is
// a break of the chain.
func TestSettledLeaseReadsIntactWithDeclaredSerials(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.New(t)
	seller := testfactory.Seller(t, pool, nil)
	s := testfactory.Series(t, pool, seller, &testfactory.SeriesOpts{Code: "T07", DocType: "invoice", Format: "T07/{FY}/{SEQ:5}"})
	now := time.Date(2026, 11, 29, 18, 30, 0, 0, gst.IST)
	issue := func(at time.Time) document.Invoice {
		t.Helper()
		d, err := document.Prepare(document.Request{Items: []document.ItemInput{{Description: "Tea", HSN: "0902", Quantity: "1", UnitPrice: "10", GSTRate: "5"}}},
			seller, s, at, document.Policy{})
		if err != nil {
			t.Fatal(err)
		}
		inv, err := invoice.Issue(ctx, pool, seller, s, d, at, series.Options{Routed: dbtest.Citus(t)})
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	issue(now)
	if _, err := lease.TakeLease(ctx, pool, s, "till-7", "test", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := lease.ForceEndLease(ctx, pool, s, "till stolen", "cli", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	seal := invoice.DeclarationSeal(seller.GSTIN)
	if _, err := lease.SettleLeaseYears(ctx, pool, s, map[gst.FY]int64{2026: 4, 2027: 0}, "paper roll ends at 4", "cli", now.Add(2*time.Hour), seal); err != nil {
		t.Fatal(err)
	}
	if next := issue(now.Add(3 * time.Hour)); next.Number != "T07/26-27/00005" {
		t.Fatalf("online after the settlement: %s, want T07/26-27/00005", next.Number)
	}

	rep, err := reports.Verify(ctx, pool, seller, "T07", 2026)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Chains[0]
	if !rep.OK() || c.DeclaredCount() != 3 || len(c.Declared) != 1 || c.Declared[0].First != 2 || c.Declared[0].Last != 4 ||
		c.Declared[0].DeviceID != "till-7" || c.Declared[0].Reason != "paper roll ends at 4" {
		t.Fatalf("verify after the settlement: OK %v, findings %v, declared %+v; want intact with 2-4 declared", rep.OK(), rep.Findings(), c.Declared)
	}
	sum, err := reports.AuditSummary(ctx, pool, seller, s, 2026)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Intact || len(sum.Gaps) != 0 || sum.CounterDrift != 0 || len(sum.Declared) != 1 || sum.Declared[0].FirstNumber != "T07/26-27/00002" ||
		sum.Declared[0].LastNumber != "T07/26-27/00004" || sum.Declared[0].Hash == "" {
		t.Fatalf("audit after the settlement: intact %v, gaps %v, drift %d, declared %+v, findings %v", sum.Intact, sum.Gaps, sum.CounterDrift, sum.Declared, sum.Findings)
	}
	doc, err := reports.DocIssue(ctx, pool, seller, mustParsePeriod(t, "112026"))
	if err != nil {
		t.Fatal(err)
	}
	got := doc.DocIssue.DocDet[0].Docs[0]
	if got.From != "T07/26-27/00001" || got.To != "T07/26-27/00005" || got.TotNum != 5 || got.Cancel != 3 || got.NetIssue != 2 || len(doc.Warnings) != 0 {
		t.Fatalf("Table 13 after the settlement: %+v, warnings %v; want 1 to 5, 5 in all, 3 cancelled", got, doc.Warnings)
	}

	// Tampering with the declaration is a break of the chain.
	if _, err := pool.Exec(ctx, `UPDATE serial_declarations SET reason = 'paper roll ends at 3' WHERE series_id = $1`, s.ID); err != nil {
		t.Fatal(err)
	}
	rep, err = reports.Verify(ctx, pool, seller, "T07", 2026)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || !hasKind(rep.Findings(), reports.DeclarationMismatch) || rep.Chains[0].ChainOK() {
		t.Fatalf("verify after the declaration was edited: %v", rep.Findings())
	}
	if _, err := pool.Exec(ctx, `DELETE FROM serial_declarations WHERE series_id = $1`, s.ID); err != nil {
		t.Fatal(err)
	}
	rep, err = reports.Verify(ctx, pool, seller, "T07", 2026)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || !hasKind(rep.Findings(), reports.DeclarationMismatch) || !hasKind(rep.Findings(), reports.SerialGap) {
		t.Fatalf("verify after the declaration was deleted: %v", rep.Findings())
	}
}

func hasKind(fs []reports.Finding, k reports.FindingKind) bool {
	for _, f := range fs {
		if f.Kind == k {
			return true
		}
	}
	return false
}

func mustParsePeriod(t *testing.T, s string) reports.Period {
	t.Helper()
	p, err := reports.ParsePeriod(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
