package outbox

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/testwait"
)

// receiver is a webhook receiver that answers every request with status
// and counts them (the API's tests check signatures and bodies).
type receiver struct {
	srv   *httptest.Server
	calls atomic.Int64
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.calls.Add(1)
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// callCount returns how many requests the receiver has had.
func (r *receiver) callCount() int { return int(r.calls.Load()) }

// deliveryAge is how old the Deliverers of startDelivererGivingUp find
// every event: their clock is testNow plus deliveryAge.
const deliveryAge = time.Hour

// startDelivererGivingUp runs a Deliverer on e's database with
// GiveUpAfter giveUp until the returned stop is called (stop waits for it
// to end); every event is deliveryAge old to it.
func startDelivererGivingUp(e *env, giveUp time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(e.t.Context())
	d := newDeliverer(deliveryAge, DelivererConfig{Pool: e.pool, AllowPrivate: true, Poll: 20 * time.Millisecond,
		RetryBase: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond, Timeout: 2 * time.Second, GiveUpAfter: giveUp})
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	e.t.Cleanup(stop)
	return stop
}

// A delivery never connects to a private address unless allowed, whatever
// the name resolved to when the webhook was registered.
func TestDeliveryRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rc := newReceiver(t, http.StatusNoContent)
	e.registerWebhook(e.seller, rc.srv.URL, "invoice.issued")
	e.mustIssue(e.seller, e.series)
	ctx, cancel := context.WithCancel(t.Context())
	d := newDeliverer(0, DelivererConfig{Pool: e.pool, Poll: 20 * time.Millisecond, RetryBase: time.Hour, Timeout: time.Second})
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	var lastErr *string
	testwait.Until(t, 20*time.Second, func() bool {
		e.pool.QueryRow(t.Context(), `SELECT last_error FROM webhook_deliveries`).Scan(&lastErr)
		return lastErr != nil
	}, "the delivery to record an error")
	cancel()
	<-done
	if lastErr == nil || !strings.Contains(*lastErr, "loopback, private or link-local") {
		t.Fatalf("last_error %v, want a refused private address", lastErr)
	}
	if calls := rc.callCount(); calls != 0 {
		t.Fatalf("the receiver on 127.0.0.1 was called %d times", calls)
	}
}

// A delivery still refused GiveUpAfter after its event is failed for
// good: not sent again, its last answer kept; one refused sooner is due
// again after the backoff.
func TestDeliveryGivesUpAfterGiveUpAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		giveUp    time.Duration
		wantState string
	}{
		// Every event is deliveryAge old to the deliverer.
		{"past", deliveryAge - time.Minute, "failed"},
		{"within", deliveryAge + time.Hour, "pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			rc := newReceiver(t, http.StatusInternalServerError) // refuses every delivery
			e.registerWebhook(e.seller, rc.srv.URL, "invoice.issued")
			e.mustIssue(e.seller, e.series)
			stop := startDelivererGivingUp(e, tc.giveUp)
			var state string
			var attempts int
			var lastErr *string
			testwait.Until(t, 20*time.Second, func() bool {
				err := e.pool.QueryRow(t.Context(), `SELECT state, attempts, last_error FROM webhook_deliveries`).Scan(&state, &attempts, &lastErr)
				return err == nil && attempts >= 2 || state == "failed"
			}, "the delivery to be given up or tried twice")
			stop()
			if state != tc.wantState || lastErr == nil || *lastErr != "HTTP 500" {
				t.Fatalf("delivery %s after %d attempts (%v); want %s after HTTP 500", state, attempts, lastErr, tc.wantState)
			}
			if calls := rc.callCount(); tc.wantState == "failed" && calls != 1 {
				t.Fatalf("a delivery given up was sent %d times", calls)
			}
		})
	}
}

// TestSlowSellerDelaysNoOther: one seller's receiver that hangs holds at
// most that seller's share of the workers; another seller's delivery,
// due after 40 of the slow seller's, arrives while they still hang.
func TestSlowSellerDelaysNoOther(t *testing.T) {
	t.Parallel()
	e := setup(t)
	release := make(chan struct{})
	var slowCalls atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slowCalls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) }) // runs first: the slow handlers return, then the server closes
	fast := make(chan struct{}, 16)
	quick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fast <- struct{}{} }))
	t.Cleanup(quick.Close)

	e.registerWebhook(e.seller, slow.URL+"/hook", "invoice.issued")
	for range 40 {
		e.mustIssue(e.seller, e.series)
	}
	other, otherSeries := e.addSeller("29AABCR1718E1Z")
	e.registerWebhook(other, quick.URL+"/hook", "invoice.issued")
	e.mustIssue(other, otherSeries)

	ctx, cancel := context.WithCancel(t.Context())
	d := newDeliverer(0, DelivererConfig{Pool: e.pool, AllowPrivate: true, Workers: 4, Poll: 20 * time.Millisecond, Timeout: time.Minute})
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	select {
	case <-fast:
	case <-time.After(20 * time.Second):
		t.Fatalf("the other seller's delivery did not arrive in 20 s while the slow seller's receiver hung (%d calls to it)", slowCalls.Load())
	}
	if n := slowCalls.Load(); n == 0 || n > 2 {
		t.Fatalf("%d of the slow seller's deliveries in flight at once with 4 workers, want 1 or 2 (its share)", n)
	}
}

// A delivery never follows a redirect: a 307 from the registered URL is
// a refusal like any other answer that is not 2xx, recorded as such and
// retried later at the registered URL; the address it points to, which
// the dial check never judged, is never called.
func TestDeliveryNeverFollowsRedirects(t *testing.T) {
	t.Parallel()
	e := setup(t)
	target := newReceiver(t, http.StatusNoContent)
	var redirects atomic.Int64
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirects.Add(1)
		http.Redirect(w, r, target.srv.URL+"/elsewhere", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	e.registerWebhook(e.seller, redirector.URL+"/hook", "invoice.issued")
	e.mustIssue(e.seller, e.series)
	stop := startDelivererGivingUp(e, deliveryAge+time.Hour) // never given up here
	var state string
	var lastErr *string
	testwait.Until(t, 20*time.Second, func() bool {
		err := e.pool.QueryRow(t.Context(), `SELECT state, last_error FROM webhook_deliveries`).Scan(&state, &lastErr)
		return err == nil && (lastErr != nil || state != "pending")
	}, "the redirected delivery to be answered")
	stop()
	if calls := target.callCount(); calls != 0 {
		t.Fatalf("the redirect's target was called %d times; a delivery must never follow a redirect", calls)
	}
	if state != "pending" || lastErr == nil || *lastErr != "HTTP 307" {
		t.Fatalf("redirected delivery: %s (%v); want pending after HTTP 307", state, lastErr)
	}
	if redirects.Load() == 0 {
		t.Fatal("the registered URL was never called")
	}
}
