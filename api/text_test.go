package api

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestBadBytesOutsideBodies: a query value, a path parameter or a header
// holding bytes that are not UTF-8, or a NUL, is a 400 whose code names
// the parameter, before anything reaches the database (which refuses such
// bytes with an error that used to surface as a 500).
func TestBadBytesOutsideBodies(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, c := range []struct {
		name, method, path string
		header             []string
		code               string
	}{
		{"query not UTF-8", "GET", "/v1/invoices?number=%FF", nil, "invalid_number"},
		{"query NUL", "GET", "/v1/invoices?number=CH1%00", nil, "invalid_number"},
		{"query NUL in a list", "GET", "/v1/series/CH1/invoices?fy=2026-27&cursor=a%00", nil, "invalid_cursor"},
		{"query name not UTF-8", "GET", "/v1/invoices?%FF=1", nil, "invalid_query"},
		{"path not UTF-8", "GET", "/v1/invoices/CH1-2026-%FF", nil, "invalid_id"},
		{"path NUL", "POST", "/v1/series/CH%001/invoices", nil, "invalid_code"},
		{"receipt path NUL", "GET", "/r/ab%00cd", nil, "invalid_public_id"},
		{"header not UTF-8", "POST", "/v1/series/CH1/device-invoices", []string{"Lease-Id", "ls_\xff"}, "invalid_lease_id"},
		{"idempotency key not UTF-8", "POST", "/v1/series/CH1/invoices", []string{"Idempotency-Key", "k\xff"}, "invalid_idempotency_key"},
	} {
		body := ""
		if c.method == "POST" {
			body = issueJSON("")
		}
		r := e.do(c.method, c.path, e.all, body, c.header...)
		var out errorBody
		json.Unmarshal(r.body, &out)
		if r.status != http.StatusBadRequest || out.Error.Code != c.code || out.Error.Message == "" {
			t.Errorf("%s: %s %q: %d %s, want 400 %s", c.name, c.method, c.path, r.status, r.body, c.code)
		}
	}
	// Nothing was numbered by the refused POSTs.
	if got := e.mustIssue("CH1", ""); got.Serial != 1 {
		t.Fatalf("the first valid invoice took serial %d, want 1", got.Serial)
	}
}
