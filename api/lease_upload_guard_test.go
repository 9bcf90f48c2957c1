package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/testfactory"
)

// countingBody is a request body that counts the bytes read from it.
type countingBody struct {
	r io.Reader
	n atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func (b *countingBody) Close() error { return nil }

// takeLease leases series code to device with the all-scopes key and
// returns the lease id.
func (e *env) takeLease(code, device string) string {
	e.t.Helper()
	r := e.do("POST", "/v1/series/"+code+"/lease", e.all, `{"device_id":"`+device+`"}`)
	e.wantStatus(r, http.StatusCreated)
	var l struct {
		LeaseID string `json:"lease_id"`
	}
	if err := json.Unmarshal(r.body, &l); err != nil || l.LeaseID == "" {
		e.t.Fatalf("lease answer %s: %v", r.body, err)
	}
	return l.LeaseID
}

// deviceBody returns an upload body of n invoices, each holding items
// empty items.
func deviceBody(n, items int) []byte {
	inv := `{"items":[{}` + strings.Repeat(`,{}`, items-1) + `]}`
	return []byte(`{"invoices":[` + inv + strings.Repeat(","+inv, n-1) + `]}`)
}

// TestDeviceUploadRefusedBeforeBody: a key not allowed for the series, or
// a Lease-Id that does not hold the series, is refused before one byte of
// the body is read; the lease holder's body is refused at the first array
// past its limit (items: 250) while it is read, not after.
func TestDeviceUploadRefusedBeforeBody(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	testfactory.Series(t, e.pool, e.seller, &testfactory.SeriesOpts{Code: "CH2", Format: "CH2/{FY}/{SEQ:5}"})
	ch2Only, err := apikey.CreateForSeries(ctx, e.pool, e.seller.ID, []string{apikey.ScopeIssue}, []string{"CH2"})
	if err != nil {
		t.Fatal(err)
	}
	lease := e.takeLease("CH1", "till-1")
	h := New(e.cfg).Handler()
	send := func(route, key, leaseID string, body []byte) (*httptest.ResponseRecorder, int64) {
		cb := &countingBody{r: bytes.NewReader(body)}
		req := httptest.NewRequest("POST", "/v1/series/CH1/"+route, nil)
		req.Body, req.ContentLength = cb, int64(len(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(headerLeaseID, leaseID)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec, cb.n.Load()
	}
	body := deviceBody(1000, 100)
	for _, route := range []string{"device-invoices", "device-cancels"} {
		for _, c := range []struct {
			name, key, lease string
			status           int
			code             string
		}{
			{"a key of another series", ch2Only, lease, http.StatusForbidden, "series_forbidden"},
			{"a lease of no series", e.issue, "ls_nosuchlease", http.StatusNotFound, "lease_not_found"},
		} {
			rec, read := send(route, c.key, c.lease, body)
			if rec.Code != c.status || !strings.Contains(rec.Body.String(), `"`+c.code+`"`) || read != 0 {
				t.Errorf("%s, %s: %d %s after reading %d bytes of the body; want %d %s before reading any",
					route, c.name, rec.Code, clip(rec.Body.String()), read, c.status, c.code)
			}
		}
	}
	big := deviceBody(1000, 1000)
	rec, read := send("device-invoices", e.issue, lease, big)
	if rec.Code != http.StatusUnprocessableEntity || read > 256<<10 {
		t.Errorf("an upload whose first invoice holds 1000 items: %d %s after reading %d of %d bytes; want 422 within the first 256 KiB",
			rec.Code, clip(rec.Body.String()), read, len(big))
	}
}

// TestDeviceUploadMemoryBounded: uploads of 3 MB bodies of empty items
// by a key that holds no lease (any issue key could send them) must not
// make the server hold what decoding them would cost (about 150 MB each).
func TestDeviceUploadMemoryBounded(t *testing.T) {
	// Not parallel: the heap of other tests would blur the measurement.
	e := setup(t)
	e.takeLease("CH1", "till-1")
	body := deviceBody(1000, 1000) // 3 MB, within every limit of the unfixed scan
	const clients = 2
	statuses, before, peak := postAtOnce(t, e, "/v1/series/CH1/device-invoices", body, clients, map[string]string{headerLeaseID: "ls_notmine"})
	for i, s := range statuses {
		if s < 400 || s >= 500 {
			t.Errorf("request %d: status %d, want 4xx", i, s)
		}
	}
	grew := int64(peak) - int64(before)
	t.Logf("heap: %d MiB before, peak %d MiB during %d uploads of %d KiB", before>>20, peak>>20, clients, len(body)>>10)
	const bound = 24 << 20 // the bodies themselves, if read, are 6 MiB
	if grew > bound {
		t.Fatalf("the heap grew by %d MiB under %d uploads of %d KiB by a key without the lease, more than %d MiB", grew>>20, clients, len(body)>>10, bound>>20)
	}
}
