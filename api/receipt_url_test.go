package api

import (
	"net/http"
	"strings"
	"testing"
)

// With Config.PublicURL the API's receipt_url is absolute (a POS prints
// it as a QR code or sends it by SMS as it is); without, it stays the path.
func TestReceiptURLAbsoluteWithPublicURL(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.PublicURL = "https://bills.example.in/invoiced" })
	inv := e.mustIssue("CH1", "")
	r := e.do("GET", "/v1/invoices/"+inv.ID, e.read, "")
	e.wantStatus(r, http.StatusOK)
	if want := `"receipt_url":"https://bills.example.in/invoiced/r/` + inv.PublicID + `"`; !strings.Contains(string(r.body), want) {
		t.Fatalf("invoice with PublicURL renders %s, want %s", r.body, want)
	}
	plain := setup(t)
	inv = plain.mustIssue("CH1", "")
	r = plain.do("GET", "/v1/invoices/"+inv.ID, plain.read, "")
	if want := `"receipt_url":"/r/` + inv.PublicID + `"`; !strings.Contains(string(r.body), want) {
		t.Fatalf("invoice without PublicURL renders %s, want %s", r.body, want)
	}
}
