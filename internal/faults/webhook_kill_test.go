package faults

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	invclient "github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/internal/dbtest"
)

// receiverMode is how the test's webhook receiver answers.
type receiverMode int

const (
	refuse receiverMode = iota // 500 to every delivery
	stall                      // keep the event, then never answer (until the sender dies)
	accept                     // keep the event, 204
)

// killReceiver is a webhook receiver that checks every signature and
// keeps each event once by id, counting every attempt per id.
type killReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	secret   string
	mode     receiverMode
	attempts map[string]int
	events   map[string]invclient.Event
	bad      []string
	stalled  int
	release  chan struct{} // closed when the test ends: stalled handlers return
}

func newKillReceiver(t *testing.T) *killReceiver {
	r := &killReceiver{attempts: map[string]int{}, events: map[string]invclient.Event{}, release: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() { close(r.release); r.srv.Close() })
	return r
}

func (r *killReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	r.mu.Lock()
	var ev invclient.Event
	if err == nil {
		err = json.Unmarshal(body, &ev)
	}
	if err == nil {
		err = invclient.VerifyWebhook(r.secret, req.Header.Get("Invoiced-Signature"), body, 5*time.Minute)
	}
	if err != nil {
		r.bad = append(r.bad, fmt.Sprintf("%v: %.200s", err, body))
		r.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.attempts[ev.ID]++
	mode := r.mode
	if mode != refuse {
		r.events[ev.ID] = ev
	}
	if mode == stall {
		r.stalled++
	}
	r.mu.Unlock()
	switch mode {
	case refuse:
		w.WriteHeader(http.StatusInternalServerError)
	case stall:
		// Processed, but the answer never reaches the sender: it is
		// killed first, and must deliver this event again.
		select {
		case <-req.Context().Done():
		case <-r.release:
		}
	case accept:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (r *killReceiver) setMode(m receiverMode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mode = m
}

// waitFor polls cond (under the receiver's lock) every 20 ms until it
// holds; the test fails after d, with what.
func (r *killReceiver) waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWebhooksSurviveSIGKILL runs the real binary: invoices are issued
// and cancelled while the receiver refuses every delivery, then while it
// takes deliveries and never answers; the server is killed with SIGKILL
// with all of them pending (some mid-attempt) and restarted on the same
// database. Every event committed (the events table) reaches the
// receiver, deduplicated by id, with a valid signature, each delivery
// ends delivered, and the events whose answer the kill lost are delivered
// again (at least once, not at most once).
func TestWebhooksSurviveSIGKILL(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dbURL := dbtest.NewURL(t)
	f := seed(t, dbURL)
	// One worker, so that the stalled attempts hold the claims of a
	// known process; the restarted one takes them over once their lease
	// (the 10 s attempt timeout plus 30 s) ends.
	srv := startServer(t, dbURL, "127.0.0.1:0", "--webhook-allow-private", "--webhook-workers", "1")
	api := invclient.New("http://"+srv.Addr, f.key)
	rc := newKillReceiver(t)
	wh, err := api.CreateWebhook(ctx, invclient.WebhookRequest{URL: rc.srv.URL + "/hook", Events: []string{"invoice.issued", "invoice.cancelled"}})
	if err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	rc.secret = wh.Secret
	rc.mu.Unlock()

	want := map[string]string{} // event id → invoice id
	item := invclient.ItemInput{Description: "Masala chai", HSN: "0902", Quantity: "1", UnitPrice: "10.00", GSTRate: "5"}
	issue := func(api *invclient.Client, tag string, singles, batch, cancels int) {
		t.Helper()
		var ids []string
		for range singles {
			inv, err := api.IssueInvoice(ctx, "CH1", invclient.IssueRequest{Items: []invclient.ItemInput{item}})
			if err != nil {
				t.Fatalf("%s: issue: %v", tag, err)
			}
			ids = append(ids, inv.ID)
		}
		if batch > 0 {
			items := make([]invclient.BatchItem, batch)
			for i := range items {
				items[i] = invclient.BatchItem{IdempotencyKey: fmt.Sprintf("%s-%d", tag, i), Items: []invclient.ItemInput{item}}
			}
			res, err := api.IssueBatch(ctx, "CH2", items)
			if err != nil {
				t.Fatalf("%s: batch: %v", tag, err)
			}
			for _, r := range res.Results {
				if r.Invoice == nil {
					t.Fatalf("%s: batch item %d: %+v", tag, r.Status, r.Error)
				}
				ids = append(ids, r.Invoice.ID)
			}
		}
		for _, id := range ids {
			want[id+".issued"] = id
		}
		for _, id := range ids[:cancels] {
			if _, err := api.CancelInvoice(ctx, id, "wrong item"); err != nil {
				t.Fatalf("%s: cancel %s: %v", tag, id, err)
			}
			want[id+".cancelled"] = id
		}
	}

	// Round 1: every first attempt is refused (the next is 10 s away).
	issue(api, "r1", 6, 8, 3)
	rc.waitFor(t, 30*time.Second, "every round-1 event refused once", func() bool {
		for id := range want {
			if rc.attempts[id] == 0 {
				return false
			}
		}
		return true
	})
	// Round 2: the receiver keeps what it gets and never answers, so the
	// worker is stuck mid-attempt when it is killed.
	rc.setMode(stall)
	issue(api, "r2", 3, 0, 1)
	rc.waitFor(t, 30*time.Second, "a delivery stalled", func() bool { return rc.stalled > 0 })

	pool := openPool(t, dbURL)
	defer pool.Close()
	var pending int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'`).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != len(want) {
		t.Fatalf("%d deliveries pending before the kill, want all %d", pending, len(want))
	}
	srv.Kill()
	rc.mu.Lock()
	stalled := map[string]bool{}
	for id := range rc.events {
		stalled[id] = true
	}
	rc.mu.Unlock()

	rc.setMode(accept)
	srv = srv.Restart(t)
	api = invclient.New("http://"+srv.Addr, f.key)
	issue(api, "r3", 2, 3, 1)

	// Everything arrives: the refused ones at their retry, the stalled
	// ones when their lease ends.
	rc.waitFor(t, 120*time.Second, fmt.Sprintf("all %d events delivered after the restart", len(want)), func() bool {
		if len(rc.events) < len(want) {
			return false
		}
		for id := range stalled {
			if rc.attempts[id] < 2 {
				return false
			}
		}
		return true
	})
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Fatalf("%d deliveries failed the signature or body check: %v", len(rc.bad), rc.bad)
	}
	for id, ev := range rc.events {
		inv, ok := want[id]
		if !ok || ev.Data.Invoice.ID != inv || !strings.HasSuffix(id, strings.TrimPrefix(ev.Type, "invoice")) {
			t.Fatalf("unexpected event %s: type %s, invoice %s", id, ev.Type, ev.Data.Invoice.ID)
		}
	}
	if len(rc.events) != len(want) {
		t.Fatalf("receiver kept %d events, want %d", len(rc.events), len(want))
	}
	// The outbox agrees: exactly these events committed, each delivered.
	var committed []string
	rows, err := pool.Query(ctx, `SELECT s.code || '-' || i.fy || '-' || i.serial || CASE e.type WHEN 'invoice.issued' THEN '.issued' ELSE '.cancelled' END,
			d.state
		FROM events e JOIN invoices i ON i.seller_id = e.seller_id AND i.id = e.invoice_id
		JOIN series s ON s.seller_id = i.seller_id AND s.id = i.series_id
		JOIN webhook_deliveries d ON d.seller_id = e.seller_id AND d.event_id = e.id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, state string
		if err := rows.Scan(&id, &state); err != nil {
			t.Fatal(err)
		}
		if state != "delivered" {
			t.Fatalf("delivery of %s is %s", id, state)
		}
		committed = append(committed, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(committed)
	for _, id := range committed {
		if _, ok := rc.events[id]; !ok {
			t.Fatalf("committed event %s never reached the receiver", id)
		}
	}
	if len(committed) != len(want) {
		t.Fatalf("%d events committed, want %d: %v", len(committed), len(want), committed)
	}
	redelivered := 0
	for id := range stalled {
		redelivered += rc.attempts[id] - 1
	}
	t.Logf("%d events; %d stalled at the kill and delivered again (%d repeats)", len(want), len(stalled), redelivered)
}
