package api

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/testfactory"
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

// TestResumeLeaseRoute: POST …/lease/resume is the device's (scope issue
// with its Lease-Id): without the header 400 missing_lease_id, with a read
// key 403, with another series' lease 404, nothing changed. The device's
// resume answers its lease with end_epoch moved on; its DELETE with the
// old epoch is 409 lease_end_superseded and ends nothing, with the new one
// it ends the lease; end_epoch is refused from a manager (422).
func TestResumeLeaseRoute(t *testing.T) {
	t.Parallel()
	e := setup(t)
	testfactory.Series(t, e.pool, e.seller, &testfactory.SeriesOpts{Code: "CH2", Format: "CH2/{FY}/{SEQ:5}"})
	id := e.takeLease("CH1", "till-1")
	other := e.takeLease("CH2", "till-2")
	e.wantError(e.do("POST", "/v1/series/CH1/lease/resume", e.issue, ""), http.StatusBadRequest, "missing_lease_id")
	e.wantStatus(e.do("POST", "/v1/series/CH1/lease/resume", e.read, "", headerLeaseID, id), http.StatusForbidden)
	e.wantError(e.do("POST", "/v1/series/CH1/lease/resume", e.issue, "", headerLeaseID, other), http.StatusNotFound, "lease_not_found")
	r := e.do("POST", "/v1/series/CH1/lease/resume", e.issue, "", headerLeaseID, id)
	e.wantStatus(r, http.StatusOK)
	var l struct {
		EndEpoch int64  `json:"end_epoch"`
		EndedAt  string `json:"ended_at"`
	}
	if err := json.Unmarshal(r.body, &l); err != nil || l.EndEpoch != 1 || l.EndedAt != "" {
		t.Fatalf("resume: %s, %v; want end_epoch 1, in force", r.body, err)
	}
	e.wantError(e.do("DELETE", "/v1/series/CH1/lease", e.issue, `{"fy":"2026-27","last_serial":0,"end_epoch":0}`, headerLeaseID, id),
		http.StatusConflict, "lease_end_superseded")
	e.wantError(e.do("DELETE", "/v1/series/CH2/lease", e.all, `{"force":true,"reason":"x","end_epoch":0}`), http.StatusUnprocessableEntity, "invalid_lease")
	e.wantStatus(e.do("DELETE", "/v1/series/CH1/lease", e.issue, `{"fy":"2026-27","last_serial":0,"end_epoch":1}`, headerLeaseID, id), http.StatusOK)
}
