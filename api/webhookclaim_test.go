package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/testfactory"
)

// deliveryState returns the state and attempts of the env's only delivery.
func (e *env) deliveryState() (string, int) {
	e.t.Helper()
	var state string
	var attempts int
	if err := e.pool.QueryRow(context.Background(), `SELECT state, attempts FROM webhook_deliveries`).Scan(&state, &attempts); err != nil {
		e.t.Fatal(err)
	}
	return state, attempts
}

// TestStaleFinishChangesNothing: a worker whose claim ran out while it
// sent (another worker claimed the delivery again and delivered it) must
// not turn the delivered delivery back into pending when it finishes:
// only the attempt that was claimed last may be finished.
func TestStaleFinishChangesNothing(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.WebhookAllowPrivate = true })
	ctx := context.Background()
	e.registerWebhook("http://127.0.0.1:9/hook", "invoice.issued")
	e.mustIssue("CH1", "")
	first, err := claimDeliveries(ctx, e.pool, 1, 0) // a claim that has run out at once
	if err != nil || len(first) != 1 {
		t.Fatalf("first claim: %d, %v", len(first), err)
	}
	second, err := claimDeliveries(ctx, e.pool, 1, time.Hour)
	if err != nil || len(second) != 1 || second[0].attempts != first[0].attempts+1 {
		t.Fatalf("second claim: %+v, %v", second, err)
	}
	if err := finishDelivery(ctx, e.pool, second[0], "delivered", 200, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := finishDelivery(ctx, e.pool, first[0], "pending", 500, "HTTP 500", time.Now()); err != nil {
		t.Fatal(err)
	}
	if state, attempts := e.deliveryState(); state != "delivered" || attempts != 2 {
		t.Fatalf("after the stale attempt finished: %s after %d attempts, want delivered after 2", state, attempts)
	}
}

// TestDeletedWebhookGetsNothingMore: deleting a webhook while one of its
// deliveries is in flight stops it for good (the attempt's finish does
// not make it pending again), and a delivery of a deleted webhook still
// pending is never claimed.
func TestDeletedWebhookGetsNothingMore(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.WebhookAllowPrivate = true })
	ctx := context.Background()
	w := e.registerWebhook("http://127.0.0.1:9/hook", "invoice.issued")
	e.mustIssue("CH1", "")
	ds, err := claimDeliveries(ctx, e.pool, 1, time.Hour)
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim: %d, %v", len(ds), err)
	}
	e.wantStatus(e.do("DELETE", "/v1/webhooks/"+w.ID, e.all, ""), http.StatusNoContent)
	if err := finishDelivery(ctx, e.pool, ds[0], "pending", 500, "HTTP 500", time.Now()); err != nil {
		t.Fatal(err)
	}
	if state, _ := e.deliveryState(); state != "failed" {
		t.Fatalf("the in-flight delivery of a deleted webhook is %s after its attempt, want failed", state)
	}
	// A delivery left pending for a deleted webhook (deleted by hand, or
	// a race the delete did not see) is not claimed.
	if _, err := e.pool.Exec(ctx, `UPDATE webhook_deliveries SET state = 'pending', next_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if ds, err := claimDeliveries(ctx, e.pool, 8, time.Hour); err != nil || len(ds) != 0 {
		t.Fatalf("claimed %d deliveries of a deleted webhook (%v)", len(ds), err)
	}
}

// TestPublicAddr: the block-list holds every range of IANA's IPv4 and
// IPv6 special-purpose address registries that is not globally
// reachable, and the IPv6 forms that embed an IPv4 address (mapped,
// compatible, NAT64, 6to4, Teredo) are judged by the address they embed.
func TestPublicAddr(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr   string
		public bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"2606:4700:4700::1111", true},
		{"2001:4860:4860::8888", true},
		{"192.0.0.9", true},  // Port Control Protocol anycast: globally reachable
		{"192.0.0.10", true}, // TURN anycast
		{"2001:1::1", true},  // PCP anycast
		{"2001:1::2", true},  // TURN anycast
		{"2001:3::1", true},  // AMT
		{"2001:4:112::1", true},
		{"2001:20::1", true},       // ORCHIDv2
		{"2001:30::1", true},       // DRIP
		{"64:ff9b::808:808", true}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", true},  // 6to4 of 8.8.8.8

		{"0.0.0.0", false},
		{"0.1.2.3", false}, // "this network", 0.0.0.0/8
		{"10.1.2.3", false},
		{"100.64.0.1", false},
		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"169.254.169.254", false},
		{"172.16.0.1", false},
		{"192.0.0.1", false},   // IETF protocol assignments
		{"192.0.0.8", false},   // IPv4 dummy address
		{"192.0.0.170", false}, // NAT64/DNS64 discovery
		{"192.0.2.1", false},   // TEST-NET-1
		{"192.31.196.1", true}, // AS112-v4: globally reachable
		{"192.52.193.1", true}, // AMT
		{"192.88.99.1", false}, // deprecated 6to4 relay anycast
		{"192.168.1.1", false},
		{"192.175.48.1", true}, // direct delegation AS112
		{"198.18.0.1", false},  // benchmarking
		{"198.19.255.255", false},
		{"198.51.100.1", false}, // TEST-NET-2
		{"203.0.113.1", false},  // TEST-NET-3
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"240.0.0.1", false}, // reserved
		{"255.255.255.255", false},
		{"::", false},
		{"::1", false},
		{"::ffff:127.0.0.1", false}, // IPv4-mapped
		{"::ffff:10.0.0.1", false},
		{"::127.0.0.1", false},        // IPv4-compatible (deprecated)
		{"::8.8.8.8", false},          // IPv4-compatible, deprecated as a whole
		{"::ffff:0:127.0.0.1", false}, // IPv4-translated
		{"64:ff9b::7f00:1", false},    // NAT64 of 127.0.0.1
		{"64:ff9b::a00:1", false},     // NAT64 of 10.0.0.1
		{"64:ff9b:1::1", false},       // local-use NAT64
		{"100::1", false},             // discard-only
		{"100:0:0:1::1", false},       // dummy IPv6 prefix
		{"2001::1", false},            // Teredo
		{"2001:2::1", false},          // benchmarking
		{"2001:10::1", false},         // ORCHID (deprecated)
		{"2001:db8::1", false},        // documentation
		{"3fff::1", false},            // documentation
		{"2002:7f00:1::1", false},     // 6to4 of 127.0.0.1
		{"2002:a00:1::1", false},      // 6to4 of 10.0.0.1
		{"2002:c0a8:101::1", false},   // 6to4 of 192.168.1.1
		{"5f00::1", false},            // segment routing SIDs
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"fe80::1", false},
		{"fec0::1", false}, // site-local (deprecated)
		{"ff02::1", false},
		{"ff0e::1", false},
	} {
		if got := publicAddr(netip.MustParseAddr(c.addr)); got != c.public {
			t.Errorf("publicAddr(%s) = %v, want %v", c.addr, got, c.public)
		}
	}
}

// TestSlowSellerDelaysNoOther: one seller's receiver that hangs holds at
// most that seller's share of the workers; another seller's delivery,
// due after 40 of the slow seller's, arrives while they still hang.
func TestSlowSellerDelaysNoOther(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.WebhookAllowPrivate = true })
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

	e.registerWebhook(slow.URL+"/hook", "invoice.issued")
	for i := range 40 {
		e.wantStatus(e.do("POST", "/v1/series/CH1/invoices", e.all, issueJSON(""), "Idempotency-Key", fmt.Sprint(i)), http.StatusCreated)
	}
	first14 := "29AABCR1718E1Z"
	check, err := gst.CheckChar(first14)
	if err != nil {
		t.Fatal(err)
	}
	other := testfactory.Seller(t, e.pool, &testfactory.SellerOpts{GSTIN: first14 + string(check)})
	testfactory.Series(t, e.pool, other, nil)
	key := mustKey(t, e.pool, other.ID, apikey.ScopeIssue, apikey.ScopeManage)
	e.wantStatus(e.do("POST", "/v1/webhooks", key, `{"url":"`+quick.URL+`/hook","events":["invoice.issued"]}`), http.StatusCreated)
	e.wantStatus(e.do("POST", "/v1/series/CH1/invoices", key, issueJSON("")), http.StatusCreated)

	ctx, cancel := context.WithCancel(context.Background())
	d := newDeliverer(e, 0, DelivererConfig{Pool: e.pool, AllowPrivate: true, Workers: 4, Poll: 20 * time.Millisecond, Timeout: time.Minute})
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
