package api

import (
	"encoding/json"
	"github.com/invoiced/invoiced/einvoice/registration"
	"github.com/invoiced/invoiced/sellers"
	"net/http"
	"strings"
	"testing"
)

// b2bJSON is an invoice to a registered buyer in Karnataka, with the
// address Rule 46(d) asks for: an e-invoicing seller's invoice needs an IRN.
const b2bJSON = `{"invoice_date":"2026-11-29","buyer":{"gstin":"29AAGCB7383J1Z4","name":"Bangalore Traders",
	"address":{"line1":"14 Residency Road","city":"Bengaluru","pin":"560025"}},"place_of_supply":"29",
	"items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]}`

// TestEInvoiceInEveryAnswer: every answer that carries an invoice carries
// e_invoice — issue, replay, batch, get, list, find, cancel, events — with
// the status the registration has: pending for an e-invoicing seller's B2B
// invoice (queued, no IRP worker here), not_applicable for a B2C one. A
// registered invoice cannot be cancelled by a server without an IRP.
func TestEInvoiceInEveryAnswer(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.WebhookAllowPrivate = true })
	ctx := t.Context()
	line1, city, pin := "Platform 1", "Pune", "411001"
	if _, err := sellers.Update(ctx, e.pool, sellerGSTIN, sellers.Changes{Line1: &line1, City: &city, PIN: &pin}); err != nil {
		t.Fatal(err)
	}
	if _, err := registration.SetEInvoicing(ctx, e.pool, sellerGSTIN, true); err != nil {
		t.Fatal(err)
	}
	e.wantStatus(e.do("POST", "/v1/webhooks", e.all, `{"url":"http://127.0.0.1:9/hook","events":["invoice.issued"]}`), http.StatusCreated)
	type withEInvoice struct {
		ID       string `json:"id"`
		Number   string `json:"number"`
		EInvoice *struct {
			Status string `json:"status"`
		} `json:"e_invoice"`
	}
	status := func(what string, b []byte) string {
		t.Helper()
		var v withEInvoice
		if err := json.Unmarshal(b, &v); err != nil || v.EInvoice == nil {
			t.Fatalf("%s: no e_invoice in %s (%v)", what, b, err)
		}
		return v.EInvoice.Status
	}
	want := func(what, got, w string) {
		t.Helper()
		if got != w {
			t.Errorf("%s: e_invoice.status %q, want %q", what, got, w)
		}
	}
	r := e.do("POST", "/v1/series/CH1/invoices", e.all, b2bJSON, "Idempotency-Key", "b2b-1")
	e.wantStatus(r, http.StatusCreated)
	want("issue (B2B)", status("issue", r.body), "pending")
	var b2b withEInvoice
	_ = json.Unmarshal(r.body, &b2b)
	r = e.do("POST", "/v1/series/CH1/invoices", e.all, b2bJSON, "Idempotency-Key", "b2b-1")
	want("replay", status("replay", r.body), "pending")
	r = e.do("POST", "/v1/series/CH1/invoices", e.all, issueJSON("2026-11-29"))
	want("issue (B2C)", status("issue", r.body), "not_applicable")
	var b2c withEInvoice
	_ = json.Unmarshal(r.body, &b2c)

	r = e.do("POST", "/v1/series/CH1/invoices/batch", e.all, `{"invoices":[`+strings.Replace(b2bJSON, "{", `{"idempotency_key":"batch-1",`, 1)+`]}`)
	e.wantStatus(r, http.StatusOK)
	var batch struct {
		Results []struct {
			Invoice json.RawMessage `json:"invoice"`
		} `json:"results"`
	}
	if err := json.Unmarshal(r.body, &batch); err != nil || len(batch.Results) != 1 {
		t.Fatalf("batch: %s", r.body)
	}
	want("batch", status("batch", batch.Results[0].Invoice), "pending")

	want("get (B2B, queued)", status("get", e.do("GET", "/v1/invoices/"+b2b.ID, e.read, "").body), "pending")
	want("get (B2C)", status("get", e.do("GET", "/v1/invoices/"+b2c.ID, e.read, "").body), "not_applicable")
	var list struct {
		Invoices []json.RawMessage `json:"invoices"`
	}
	if err := json.Unmarshal(e.do("GET", "/v1/series/CH1/invoices?fy=2026-27", e.read, "").body, &list); err != nil || len(list.Invoices) != 3 {
		t.Fatalf("list: %d invoices, %v", len(list.Invoices), err)
	}
	want("list", status("list", list.Invoices[0]), "pending")
	var found struct {
		Invoices []json.RawMessage `json:"invoices"`
	}
	if err := json.Unmarshal(e.do("GET", "/v1/invoices?number="+b2b.Number, e.read, "").body, &found); err != nil || len(found.Invoices) != 1 {
		t.Fatalf("find: %v", err)
	}
	want("find", status("find", found.Invoices[0]), "pending")
	var events struct {
		Events []struct {
			Data struct {
				Invoice json.RawMessage `json:"invoice"`
			} `json:"data"`
		} `json:"events"`
	}
	if err := json.Unmarshal(e.do("GET", "/v1/events", e.read, "").body, &events); err != nil || len(events.Events) == 0 {
		t.Fatalf("events: %v", err)
	}
	want("event", status("event", events.Events[0].Data.Invoice), "pending")

	r = e.do("POST", "/v1/invoices/"+b2c.ID+"/cancel", e.all, `{"reason":"typo","e_invoice_reason":"data_entry_mistake"}`)
	e.wantStatus(r, http.StatusOK)
	want("cancel (B2C)", status("cancel", r.body), "not_applicable")
	e.wantError(e.do("POST", "/v1/invoices/"+b2b.ID+"/cancel", e.all, `{"reason":"typo","e_invoice_reason":"wrong"}`), http.StatusUnprocessableEntity, "invalid_invoice")

	// Registered (as the workers record it): this server has no IRP.
	if _, err := e.pool.Exec(ctx, `INSERT INTO e_invoices (invoice_id, seller_id, status, irn, ack_no, ack_date)
		SELECT id, seller_id, 'registered', repeat('a', 64), '112610000000001', now() FROM invoices WHERE number = $1`, b2b.Number); err != nil {
		t.Fatal(err)
	}
	e.wantError(e.do("POST", "/v1/invoices/"+b2b.ID+"/cancel", e.all, `{"reason":"typo"}`), http.StatusServiceUnavailable, "e_invoicing_not_configured")
	want("get (registered)", status("get", e.do("GET", "/v1/invoices/"+b2b.ID, e.read, "").body), "registered")
}
