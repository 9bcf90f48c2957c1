//go:build citus

// Tests of the API on Citus: make test-citus builds them with -tags citus
// and runs them on scripts/citus' cluster (a coordinator and two workers).
package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// singleShardPool returns a pool on e's database whose sessions refuse
// every statement Citus would split into more than one task (one query
// per shard): citus.multi_task_query_log_level = error. A statement on
// one seller's shard group, or on reference tables only, runs as before.
func singleShardPool(t *testing.T, e *env) *pgxpool.Pool {
	t.Helper()
	cfg := e.pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["citus.multi_task_query_log_level"] = "error"
	p, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestCitusSellerRequestsAreSingleShard: every request of one seller —
// series, issuing (single and batch), reads, the routed receipt link,
// listings, search, cancels, webhooks and events, period locks, the audit
// export, verification and GSTR-1 Table 13 — runs on the seller's shard
// group alone (router execution): the server's sessions refuse any
// statement Citus splits over several shards, and every request still
// succeeds. The control, a statement over every seller on the same pool,
// is refused, so the setting does bite; and a legacy receipt id, which
// names no seller, is looked up on every shard and refused too.
func TestCitusSellerRequestsAreSingleShard(t *testing.T) {
	dbtest.RequireCitus(t)
	t.Parallel()
	e := setup(t, func(c *Config) { c.WebhookAllowPrivate, c.BackdateDays = true, 10 })
	strict := singleShardPool(t, e)
	if _, err := strict.Exec(t.Context(), `SELECT count(*) FROM invoices`); err == nil ||
		!strings.Contains(err.Error(), "multi-task query") {
		t.Fatalf("a statement over every shard on the strict pool: %v, want refused as a multi-task query", err)
	}
	cfg := e.cfg
	cfg.Pool = strict
	e.url = startServer(t, cfg)

	e.wantStatus(e.do("POST", "/v1/series", e.all, `{"code":"CH2","doc_type":"invoice","format":"CH2/{FY}/{SEQ:4}"}`), 201)
	w := e.registerWebhook("http://127.0.0.1:9/never", "invoice.issued", "invoice.cancelled")
	var issued []invoiceOut
	for _, d := range []string{"2026-11-27", "2026-11-28", "2026-11-29"} {
		issued = append(issued, e.invoice(e.do("POST", "/v1/series/CH1/invoices", e.issue, issueJSON(d), "Idempotency-Key", "k"+d)))
	}
	// The same key again: the stored answer, read back.
	e.wantStatus(e.do("POST", "/v1/series/CH1/invoices", e.issue, issueJSON("2026-11-29"), "Idempotency-Key", "k2026-11-29"), 201)
	items := []string{batchItemJSON("b1", ""), batchItemJSON("b2", ""), batchItemJSON("b3", "")}
	for i, res := range e.batch(e.do("POST", "/v1/series/CH2/invoices/batch", e.issue, batchJSON(items))).Results {
		if res.Invoice == nil || res.Invoice.ID == "" {
			t.Fatalf("batch item %d not issued: %+v", i, res)
		}
	}
	inv := issued[1]
	for _, path := range []string{
		"/v1/invoices/" + inv.ID,
		"/v1/invoices?number=" + inv.Number,
		"/v1/series",
		"/v1/series/CH1/invoices",
		"/v1/series/CH1/invoices?from=2026-11-28&to=2026-11-29",
		"/v1/events",
		"/v1/webhooks",
		"/v1/periods",
		"/v1/series/CH1/audit?fy=2026-27&format=json",
		"/v1/series/CH1/audit?fy=2026-27&format=csv",
		"/v1/reports/gstr1/doc-issue?fp=112026",
	} {
		e.wantStatus(e.do("GET", path, e.all, ""), http.StatusOK)
	}
	page := e.do("GET", "/r/"+inv.PublicID, "", "")
	e.wantStatus(page, http.StatusOK)
	if !strings.Contains(string(page.body), inv.Number) {
		t.Fatalf("/r/%s does not show %s", inv.PublicID, inv.Number)
	}
	e.wantStatus(e.do("POST", "/v1/invoices/"+inv.ID+"/cancel", e.issue, `{"reason":"duplicate"}`), http.StatusOK)
	e.wantStatus(e.do("POST", "/v1/periods/102026/lock", e.all, ""), http.StatusCreated)
	e.wantStatus(e.do("DELETE", "/v1/webhooks/"+w.ID, e.all, ""), http.StatusNoContent)

	// A legacy id (before routed ids) names no seller: every shard is asked.
	const legacy = "k7vq2mzx3ahd4n5rbtcw6yepsg"
	if _, err := e.pool.Exec(t.Context(), `UPDATE invoices SET public_id = $1 WHERE seller_id = $2 AND number = $3`,
		legacy, e.seller.ID, issued[2].Number); err != nil {
		t.Fatal(err)
	}
	e.wantStatus(e.do("GET", "/r/"+legacy, "", ""), http.StatusInternalServerError)
}
