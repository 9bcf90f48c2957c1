package offline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/gst"
)

// holdDeletes is a transport that passes no DELETE on at once: it keeps
// the request and answers the client 408, as a proxy that gave up waiting
// on a request it had already passed on; the kept request reaches the
// server only at release, as a request stuck in flight does.
type holdDeletes struct {
	base http.RoundTripper
	mu   sync.Mutex
	held []*http.Request
}

func (h *holdDeletes) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodDelete {
		return h.base.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	kept := r.Clone(context.Background())
	kept.Body, kept.ContentLength, kept.GetBody = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
	h.mu.Lock()
	h.held = append(h.held, kept)
	h.mu.Unlock()
	return &http.Response{StatusCode: http.StatusRequestTimeout, Status: "408 Request Timeout", Header: http.Header{},
		Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
}

// heldAnswer is the server's answer to a released request.
type heldAnswer struct {
	status int
	code   string
}

// release sends every kept request to the server, in order, and returns
// the answers.
func (h *holdDeletes) release(t *testing.T) []heldAnswer {
	t.Helper()
	h.mu.Lock()
	held := h.held
	h.held = nil
	h.mu.Unlock()
	var out []heldAnswer
	for _, r := range held {
		res, err := h.base.RoundTrip(r)
		if err != nil {
			t.Fatal(err)
		}
		var b struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		_ = json.NewDecoder(res.Body).Decode(&b)
		res.Body.Close()
		out = append(out, heldAnswer{status: res.StatusCode, code: b.Error.Code})
	}
	return out
}

// TestEndStuckInFlightNeverEndsAResumedLease: the device's DELETE of its
// lease is stuck in flight (a proxy answered 408 and passed it on later);
// the device learns that the lease holds and sells on. When the stuck
// DELETE reaches the server it must not end the lease: online issuance,
// free again, would hand out the number the till printed after resuming.
func TestEndStuckInFlightNeverEndsAResumedLease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	clk := &clock{time.Date(2026, 11, 29, 18, 30, 0, 0, gst.IST)}
	term := e.terminal(t, "till-7", clk)
	var p printed
	for range 3 {
		r, err := term.Issue(sale(0))
		if err != nil {
			t.Fatal(err)
		}
		p.add(t, r.Number, "the till")
	}
	hold := &holdDeletes{base: http.DefaultTransport}
	dev := client.New(e.url, e.key, client.WithBackoff(5*time.Millisecond, 50*time.Millisecond), client.WithHTTPClient(&http.Client{Transport: hold}))
	_, endErr := term.End(ctx, dev)
	t.Logf("End with the DELETE stuck: %v", endErr)
	if endErr == nil || term.EndPending() {
		t.Fatalf("End with its DELETE stuck: %v, pending %v; want an error and the lease shown to hold", endErr, term.EndPending())
	}
	r, err := term.Issue(sale(0))
	if err != nil {
		t.Fatalf("Issue after the lease was shown to hold: %v", err)
	}
	p.add(t, r.Number, "the till after resuming")
	answers := hold.release(t)
	t.Logf("the stuck DELETE, released: %+v", answers)
	inv, err := e.all.IssueInvoice(ctx, "T07", sale(0))
	if err == nil {
		p.add(t, inv.Number, "online after the stuck DELETE")
	}
	wantCode(t, err, http.StatusConflict, client.CodeSeriesLeased)
	if len(answers) != 1 || answers[0] != (heldAnswer{http.StatusConflict, "lease_end_superseded"}) {
		t.Fatalf("the stuck DELETE was answered %+v, want one 409 lease_end_superseded", answers)
	}
	// The till ends its lease with the epoch it resumed at.
	l, err := term.End(ctx, e.all)
	if err != nil || l.EndSerial != 4 {
		t.Fatalf("End after resuming: %+v, %v", l, err)
	}
	inv, err = e.all.IssueInvoice(ctx, "T07", sale(0))
	if err != nil {
		t.Fatal(err)
	}
	p.add(t, inv.Number, "online after the end")
	wantExactly(t, e.serials(t, 2026), 5)
	e.verify(t)
}
