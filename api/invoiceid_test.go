package api

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/invoiced/invoiced/internal/testfactory"

	"github.com/invoiced/invoiced/apikey"
)

// TestInvoiceIDsRevealNothingAcrossSellers: a seller's invoice ids depend
// on its own invoices only (another seller issuing in between changes
// nothing), another seller's key finds nothing under them, and the
// numeric ids answered before keep working.
func TestInvoiceIDsRevealNothingAcrossSellers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	other := testfactory.Seller(t, e.pool, &testfactory.SellerOpts{GSTIN: otherGSTIN, Name: "Other Traders"})
	otherKey := mustKey(t, e.pool, other.ID, apikey.ScopeIssue, apikey.ScopeRead, apikey.ScopeManage)
	e.wantStatus(e.do("POST", "/v1/series", otherKey, `{"code":"CH1","doc_type":"invoice","format":"CH1/{FY}/{SEQ:5}"}`), http.StatusCreated)

	first := e.mustIssue("CH1", "")
	for range 5 {
		e.wantStatus(e.do("POST", "/v1/series/CH1/invoices", otherKey, issueJSON("")), http.StatusCreated)
	}
	second := e.mustIssue("CH1", "")
	if first.ID != "CH1-2026-1" || second.ID != "CH1-2026-2" {
		t.Fatalf("ids %q and %q around another seller's 5 invoices; want CH1-2026-1 and CH1-2026-2, which say nothing of others", first.ID, second.ID)
	}
	// The same id under another seller's key is that seller's own
	// invoice, never ours.
	r := e.do("GET", "/v1/invoices/"+second.ID, otherKey, "")
	e.wantStatus(r, http.StatusOK)
	if got := e.invoice(r); got.Number != second.Number || got.PublicID == second.PublicID {
		t.Fatalf("another seller's GET %s: %s", second.ID, r.body)
	}
	e.wantError(e.do("GET", "/v1/invoices/CH1-2026-3", e.read, ""), http.StatusNotFound, "invoice_not_found")
	for _, bad := range []string{"CH1-2026-02", "CH1-26-2", "CH1-2026-0", "CH1--2", "-2026-2", "CH1-2026-", "ch1-2026-x", "CH1-9999-1"} {
		e.wantError(e.do("GET", "/v1/invoices/"+bad, e.read, ""), http.StatusNotFound, "invoice_not_found")
	}
	// Case does not matter in the code, as elsewhere in paths.
	e.wantStatus(e.do("GET", "/v1/invoices/ch1-2026-2", e.read, ""), http.StatusOK)

	// The numeric id answered before this change still finds the invoice,
	// for its seller only.
	var legacy int64
	if err := e.pool.QueryRow(ctx, `SELECT id FROM invoices WHERE seller_id = $1 AND serial = 2`, e.seller.ID).Scan(&legacy); err != nil {
		t.Fatal(err)
	}
	r = e.do("GET", "/v1/invoices/"+strconv.FormatInt(legacy, 10), e.read, "")
	e.wantStatus(r, http.StatusOK)
	if got := e.invoice(r); got.ID != second.ID {
		t.Fatalf("GET by the numeric id answers id %q, want %q", got.ID, second.ID)
	}
	e.wantError(e.do("GET", "/v1/invoices/"+strconv.FormatInt(legacy, 10), otherKey, ""), http.StatusNotFound, "invoice_not_found")
	r = e.do("POST", "/v1/invoices/"+second.ID+"/cancel", e.all, `{"reason":"duplicate"}`)
	e.wantStatus(r, http.StatusOK)
	if got := e.invoice(r); got.ID != second.ID || got.Status != "cancelled" {
		t.Fatalf("cancel by id: %s", r.body)
	}
}
