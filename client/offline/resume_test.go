package offline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
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
	kept, timeout, err := holdInFlight(r)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.held = append(h.held, kept)
	h.mu.Unlock()
	return timeout, nil
}

// holdInFlight returns a copy of r (its body read) to send later, and the
// 408 a proxy answers when it gives up waiting on a request it passed on.
func holdInFlight(r *http.Request) (*http.Request, *http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, nil, err
		}
		r.Body.Close()
	}
	kept := r.Clone(context.Background())
	kept.Body, kept.ContentLength, kept.GetBody = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
	return kept, &http.Response{StatusCode: http.StatusRequestTimeout, Status: "408 Request Timeout", Header: http.Header{},
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

// TestForcedEndAfterALostResumeSettlesByTheDevice: the till asks to end
// its lease; the DELETE is stuck in flight and the answer to the resume
// that follows is lost (the server moved the lease's end epoch on, the
// till never learnt it). The lease is then ended by force. When the till
// turns up, its End must settle the lease (everything was uploaded): the
// table says "the device's end settles it", not only an accountant.
func TestForcedEndAfterALostResumeSettlesByTheDevice(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	clk := &clock{time.Date(2026, 11, 29, 18, 30, 0, 0, gst.IST)}
	term := e.terminal(t, "till-7", clk)
	for range 3 {
		if _, err := term.Issue(sale(0)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := term.Sync(ctx, e.all); err != nil {
		t.Fatal(err)
	}
	hold := &holdDeletes{base: &dropAnswers{base: http.DefaultTransport, drop: func(r *http.Request) bool {
		return strings.HasSuffix(r.URL.Path, "/lease/resume")
	}}}
	dev := client.New(e.url, e.key, client.WithBackoff(5*time.Millisecond, 50*time.Millisecond), client.WithHTTPClient(&http.Client{Transport: hold}))
	endCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err := term.End(endCtx, dev)
	cancel()
	if !errors.Is(err, offline.ErrEndPending) {
		t.Fatalf("End with the DELETE stuck and the resume's answer lost: %v, want ErrEndPending", err)
	}
	if _, err := e.all.EndLease(ctx, "T07", "", client.EndLeaseRequest{Force: true, Reason: "till 7 not answering"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		l, err := term.End(ctx, e.all)
		t.Logf("End %d after the forced end: %+v, %v", i, l.SettledAt, err)
		if err == nil {
			if l.SettledAt == "" || l.EndSerial != 3 {
				t.Fatalf("End settled %+v, want the lease settled at serial 3", l)
			}
			inv, err := e.all.IssueInvoice(ctx, "T07", sale(0))
			if err != nil || inv.Number != "T07/26-27/00004" {
				t.Fatalf("online after the device's end: %+v, %v", inv, err)
			}
			return
		}
	}
	t.Fatalf("the till's End never settled the lease ended by force: only the accountant can")
}
