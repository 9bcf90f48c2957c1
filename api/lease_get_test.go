package api

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/invoiced/invoiced/apikey"
)

// TestHolderLeaseHidesItsIDWithoutManage: the lease id is the device's
// credential (its uploads and its own end send it as Lease-Id). Reading the
// holder without a Lease-Id shows it only to a manage key, the scope that
// takes and force-ends leases; a read or issue key sees the lease without
// it, and so cannot end the lease while its device numbers offline. The
// device itself, with its Lease-Id, still reads its lease whole.
func TestHolderLeaseHidesItsIDWithoutManage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	id := e.takeLease("CH1", "till-1")
	leaseID := func(r resp) string {
		t.Helper()
		e.wantStatus(r, http.StatusOK)
		var l map[string]any
		if err := json.Unmarshal(r.body, &l); err != nil {
			t.Fatalf("lease answer %s: %v", r.body, err)
		}
		if l["device_id"] != "till-1" || l["series"] != "CH1" {
			t.Fatalf("lease answer %s: not the holder", r.body)
		}
		s, _ := l["lease_id"].(string)
		return s
	}
	issueRead := mustKey(t, e.pool, e.seller.ID, apikey.ScopeIssue, apikey.ScopeRead)
	for name, key := range map[string]string{"read": e.read, "issue and read": issueRead} {
		if got := leaseID(e.do("GET", "/v1/series/CH1/lease", key, "")); got != "" {
			t.Errorf("a %s key reads the holder's lease id %q", name, got)
		}
	}
	if got := leaseID(e.do("GET", "/v1/series/CH1/lease", e.all, "")); got != id {
		t.Errorf("a manage key reads the holder's lease id %q, want %q", got, id)
	}
	if got := leaseID(e.do("GET", "/v1/series/CH1/lease", e.issue, "", headerLeaseID, id)); got != id {
		t.Errorf("the device reads its lease with id %q, want %q", got, id)
	}
	// Without the id the issue key cannot end the lease: its DELETE
	// without Lease-Id needs manage.
	e.wantStatus(e.do("DELETE", "/v1/series/CH1/lease", issueRead, `{"force":true,"reason":"x"}`), http.StatusForbidden)
}
