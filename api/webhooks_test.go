package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/invoiced/invoiced/webhook"
	"github.com/invoiced/invoiced/webhook/outbox"
)

// receiver is a webhook receiver that refuses its first failFirst
// deliveries with 500, checks every signature, and keeps each event once.
type receiver struct {
	t         *testing.T
	srv       *httptest.Server
	mu        sync.Mutex
	secret    string
	failFirst int
	calls     int
	bad       int // requests with an invalid signature
	events    map[string]eventJSON
}

func newReceiver(t *testing.T, failFirst int) *receiver {
	r := &receiver{t: t, failFirst: failFirst, events: map[string]eventJSON{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls++
		if r.calls <= r.failFirst {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if err := webhook.VerifySignature(r.secret, req.Header.Get(webhook.SignatureHeader), body, 5*time.Minute, time.Now()); err != nil {
			r.bad++
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var ev eventJSON
		if err := json.Unmarshal(body, &ev); err != nil {
			r.bad++
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.events[ev.ID] = ev
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) snapshot() (map[string]eventJSON, int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]eventJSON, len(r.events))
	for k, v := range r.events {
		out[k] = v
	}
	return out, r.calls, r.bad
}

// startDeliverer runs an outbox.Deliverer with this API's event bodies on
// e's database until the returned stop is called (stop waits for it to
// end), counting in m. It gives a delivery up two hours after its event,
// and reads events' ages by the clock of e, which dated them, moved on
// by an hour: were it the real clock, the events, dated testNow, would
// age with the calendar.
func startDeliverer(e *env, m *metrics.Metrics) (stop func()) {
	ctx, cancel := context.WithCancel(e.t.Context())
	d := outbox.NewDeliverer(outbox.DelivererConfig{Pool: e.pool, Metrics: m, AllowPrivate: true, Poll: 20 * time.Millisecond,
		RetryBase: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond, Timeout: 2 * time.Second, GiveUpAfter: 2 * time.Hour,
		Body: EventBody(e.cfg.PublicURL), Now: func() time.Time { return e.cfg.Now().Add(time.Hour) }})
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	e.t.Cleanup(stop)
	return stop
}

func (e *env) registerWebhook(url string, events ...string) webhookJSON {
	e.t.Helper()
	ev, _ := json.Marshal(events)
	r := e.do("POST", "/v1/webhooks", e.all, `{"url":"`+url+`","events":`+string(ev)+`}`)
	e.wantStatus(r, http.StatusCreated)
	var w webhookJSON
	if err := json.Unmarshal(r.body, &w); err != nil || w.Secret == "" || w.ID == "" {
		e.t.Fatalf("webhook answer %s: %v", r.body, err)
	}
	return w
}

// The done test of webhooks: a receiver that fails its first three
// deliveries gets every event, each once after deduplication by id, with
// a valid signature, across a restart of the server and its deliverer
// between two rounds of issues and cancels.
func TestWebhooksDeliverEveryEventAcrossRestart(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.WebhookAllowPrivate = true })
	rc := newReceiver(t, 3)
	w := e.registerWebhook(rc.srv.URL+"/hook", "invoice.issued", "invoice.cancelled")
	rc.mu.Lock()
	rc.secret = w.Secret
	rc.mu.Unlock()

	want := map[string]string{} // event id → invoice id
	round := func(tag string) {
		var ids []string
		for i := range 5 {
			r := e.do("POST", "/v1/series/CH1/invoices", e.issue, issueJSON(""), "Idempotency-Key", fmt.Sprintf("%s-%d", tag, i))
			e.wantStatus(r, http.StatusCreated)
			ids = append(ids, e.invoice(r).ID)
		}
		items := make([]string, 6)
		for i := range items {
			items[i] = batchItemJSON(fmt.Sprintf("%s-b%d", tag, i), "")
		}
		for _, res := range e.batch(e.do("POST", "/v1/series/CH1/invoices/batch", e.issue, batchJSON(items))).Results {
			ids = append(ids, res.Invoice.ID)
		}
		for _, id := range ids {
			want[id+".issued"] = id
		}
		for _, id := range ids[:2] {
			e.wantStatus(e.do("POST", "/v1/invoices/"+id+"/cancel", e.issue, `{"reason":"test"}`), http.StatusOK)
			want[id+".cancelled"] = id
		}
	}
	m := metrics.New()
	stop := startDeliverer(e, m)
	round("r1")
	// Restart: the deliverer stops (possibly mid-attempt) and a new server
	// and deliverer take over the same database.
	stop()
	e.url = startServer(t, e.cfg)
	round("r2")
	stop2 := startDeliverer(e, m)

	// The receiver holds an event before the deliverer learns that it was
	// accepted, counts the attempt and records the delivery: wait for that
	// bookkeeping (every delivery row delivered), not only for the receiver.
	notDelivered := func() int {
		var n int
		if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM webhook_deliveries WHERE state <> 'delivered'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	testwait.Until(t, time.Minute, func() bool {
		got, _, _ := rc.snapshot()
		return len(got) == len(want) && notDelivered() == 0
	}, "the receiver to hold all %d events and every delivery to be recorded delivered", len(want))
	// The attempts are counted before they are recorded; stopping the
	// deliverer also waits for any worker still between the two.
	stop2()
	got, calls, bad := rc.snapshot()
	if bad != 0 {
		t.Fatalf("%d deliveries with an invalid signature", bad)
	}
	if calls < len(want)+3 {
		t.Fatalf("%d calls for %d events and 3 refusals", calls, len(want))
	}
	for id, ev := range got {
		inv, ok := want[id]
		if !ok || ev.Data.Invoice.ID != inv || !strings.HasSuffix(id, strings.TrimPrefix(ev.Type, "invoice")) {
			t.Fatalf("unexpected event %s: %+v", id, ev)
		}
		if ev.Type == "invoice.issued" && ev.Data.Invoice.Status != "issued" || ev.Type == "invoice.cancelled" && ev.Data.Invoice.Status != "cancelled" {
			t.Fatalf("event %s shows the invoice %s", id, ev.Data.Invoice.Status)
		}
	}
	// The metrics count every attempt, the three refused ones too.
	if g, err := m.Gather(); err != nil || g["invoiced_webhook_deliveries_total"] < float64(len(want)+3) ||
		g["invoiced_webhook_delivery_duration_seconds"] != g["invoiced_webhook_deliveries_total"] {
		t.Fatalf("delivery metrics %v, %v; want at least %d attempts", g["invoiced_webhook_deliveries_total"], err, len(want)+3)
	}

	// The event log replays the same events, oldest first, page by page.
	var listed []eventJSON
	after := ""
	for {
		r := e.do("GET", "/v1/events?limit=7"+after, e.read, "")
		e.wantStatus(r, http.StatusOK)
		var page eventListJSON
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Events) == 0 {
			break
		}
		listed = append(listed, page.Events...)
		after = "&after=" + page.Events[len(page.Events)-1].ID
	}
	if len(listed) != len(want) {
		t.Fatalf("GET /v1/events listed %d events, want %d", len(listed), len(want))
	}
	for i, ev := range listed {
		if _, ok := want[ev.ID]; !ok {
			t.Fatalf("listed unexpected event %s", ev.ID)
		}
		if i > 0 && ev.CreatedAt < listed[i-1].CreatedAt {
			t.Fatalf("events not oldest first: %s after %s", ev.CreatedAt, listed[i-1].CreatedAt)
		}
	}
	e.wantError(e.do("GET", "/v1/events?after=CH1-2026-999.issued", e.read, ""), http.StatusUnprocessableEntity, "invalid_cursor")
	e.wantError(e.do("GET", "/v1/events?after=nonsense", e.read, ""), http.StatusUnprocessableEntity, "invalid_cursor")
	e.wantError(e.do("GET", "/v1/events", e.issue, ""), http.StatusForbidden, "forbidden")
}

// An event row exists exactly for each committed change of a seller with
// a webhook, under concurrent single requests (group commit, predicted
// batches) and batches; a seller without a webhook gets none.
func TestEventsIffCommitted(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.WebhookAllowPrivate = true })
	e.mustIssue("CH1", "") // before the webhook: no event
	w := e.registerWebhook("http://127.0.0.1:9/never", "invoice.issued")
	// A second seller, without a webhook, issues at the same time.
	other := testfactory.Seller(t, e.pool, &testfactory.SellerOpts{GSTIN: otherGSTIN, Name: "No Hooks"})
	testfactory.Series(t, e.pool, other, &testfactory.SeriesOpts{Code: "OB1", Format: "OB1/{FY}/{SEQ:5}"})
	otherKey := mustKey(t, e.pool, other.ID, apikey.ScopeIssue)
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for i := range 5 {
				r := e.do("POST", "/v1/series/OB1/invoices", otherKey, issueJSON(""), "Idempotency-Key", fmt.Sprintf("o%d-%d", g, i))
				if r.status != http.StatusCreated {
					t.Errorf("issue for the seller without a webhook: %d %s", r.status, r.body)
				}
			}
		})
	}
	wg.Go(func() {
		items := []string{batchItemJSON("o1", ""), batchItemJSON("o2", "")}
		e.batch(e.do("POST", "/v1/series/OB1/invoices/batch", otherKey, batchJSON(items)))
	})
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				r := e.do("POST", "/v1/series/CH1/invoices", e.issue, issueJSON(""), "Idempotency-Key", fmt.Sprintf("g%d-%d", g, i))
				if r.status != http.StatusCreated {
					t.Errorf("issue: %d %s", r.status, r.body)
				}
			}
		})
	}
	wg.Go(func() {
		items := []string{batchItemJSON("x1", ""), badItemJSON("x2"), batchItemJSON("x3", "")}
		e.batch(e.do("POST", "/v1/series/CH1/invoices/batch", e.issue, batchJSON(items)))
	})
	wg.Wait()
	// A cancel is not subscribed: no event for it.
	inv := e.mustIssue("CH1", "")
	e.wantStatus(e.do("POST", "/v1/invoices/"+inv.ID+"/cancel", e.issue, `{"reason":"x"}`), http.StatusOK)
	var events, deliveries, invoices, otherInvoices int
	err := e.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM webhook_deliveries),
		(SELECT count(*) FROM invoices WHERE seller_id = $1), (SELECT count(*) FROM invoices WHERE seller_id = $2)`, e.seller.ID, other.ID).
		Scan(&events, &deliveries, &invoices, &otherInvoices)
	if err != nil {
		t.Fatal(err)
	}
	if invoices != 84 || events != 83 || deliveries != 83 {
		t.Fatalf("%d invoices, %d events, %d deliveries; want 84, 83, 83", invoices, events, deliveries)
	}
	if otherInvoices != 12 {
		t.Fatalf("the seller without a webhook has %d invoices, want 12", otherInvoices)
	}
	checkEventsIffCommitted(t, e, other.ID)
	// After the webhook is deleted, nothing more is recorded and its
	// pending deliveries are dropped.
	e.wantStatus(e.do("DELETE", "/v1/webhooks/"+w.ID, e.all, ""), http.StatusNoContent)
	e.wantError(e.do("DELETE", "/v1/webhooks/"+w.ID, e.all, ""), http.StatusNotFound, "webhook_not_found")
	e.mustIssue("CH1", "")
	var pending int
	if err := e.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM webhook_deliveries WHERE state = 'pending')`).Scan(&events, &pending); err != nil || events != 83 || pending != 0 {
		t.Fatalf("after delete: %d events, %d pending (%v)", events, pending, err)
	}
}

// checkEventsIffCommitted checks, row by row, what TestEventsIffCommitted
// counts: the events are exactly one invoice.issued per invoice of e's
// seller after its first (issued before the webhook), none of the seller
// other's, each with exactly one delivery, all to one webhook.
func checkEventsIffCommitted(t *testing.T, e *env, other int64) {
	t.Helper()
	ctx := t.Context()
	serialOf := map[int64]int64{} // e's invoices: id → serial
	rows, err := e.pool.Query(ctx, `SELECT id, serial FROM invoices WHERE seller_id = $1`, e.seller.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, serial int64
		if err := rows.Scan(&id, &serial); err != nil {
			t.Fatal(err)
		}
		serialOf[id] = serial
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	eventOf := map[int64]int64{} // invoice id → event id
	rows, err = e.pool.Query(ctx, `SELECT id, seller_id, type, invoice_id FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, seller, inv int64
		var typ string
		if err := rows.Scan(&id, &seller, &typ, &inv); err != nil {
			t.Fatal(err)
		}
		serial, ours := serialOf[inv]
		switch {
		case seller == other:
			t.Errorf("event %d (%s, invoice %d) of the seller without a webhook", id, typ, inv)
		case seller != e.seller.ID || !ours:
			t.Errorf("event %d of seller %d for invoice %d, which is not one of seller %d's", id, seller, inv, e.seller.ID)
		case typ != "invoice.issued":
			t.Errorf("event %d is %s, which no webhook subscribed to", id, typ)
		case serial == 1:
			t.Errorf("event %d for serial 1, issued before the webhook", id)
		case eventOf[inv] != 0:
			t.Errorf("invoice %d has events %d and %d", inv, eventOf[inv], id)
		}
		eventOf[inv] = id
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for id, serial := range serialOf {
		if _, ok := eventOf[id]; !ok && serial != 1 {
			t.Errorf("invoice %d (serial %d), committed after the webhook, has no event", id, serial)
		}
	}
	deliveriesOf := map[int64]int{} // event id → deliveries
	hooks := map[int64]bool{}
	rows, err = e.pool.Query(ctx, `SELECT event_id, webhook_id FROM webhook_deliveries`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var ev, hook int64
		if err := rows.Scan(&ev, &hook); err != nil {
			t.Fatal(err)
		}
		deliveriesOf[ev]++
		hooks[hook] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for inv, ev := range eventOf {
		if n := deliveriesOf[ev]; n != 1 {
			t.Errorf("event %d (invoice %d) has %d deliveries, want 1", ev, inv, n)
		}
	}
	if len(hooks) != 1 {
		t.Errorf("deliveries to %d webhooks, want the one", len(hooks))
	}
}

// Registration: validation, the secret shown once, and SSRF refusal.
func TestWebhookRegistration(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for name, body := range map[string]string{
		"no events":  `{"url":"https://example.com/h","events":[]}`,
		"bad event":  `{"url":"https://example.com/h","events":["invoice.paid"]}`,
		"ftp":        `{"url":"ftp://example.com/h","events":["invoice.issued"]}`,
		"relative":   `{"url":"/h","events":["invoice.issued"]}`,
		"user info":  `{"url":"https://u:p@example.com/h","events":["invoice.issued"]}`,
		"loopback":   `{"url":"http://127.0.0.1:8080/h","events":["invoice.issued"]}`,
		"private":    `{"url":"http://10.1.2.3/h","events":["invoice.issued"]}`,
		"link-local": `{"url":"http://169.254.169.254/latest","events":["invoice.issued"]}`,
		"ipv6 loop":  `{"url":"http://[::1]/h","events":["invoice.issued"]}`,
		"localhost":  `{"url":"http://localhost/h","events":["invoice.issued"]}`,
		"mapped v4":  `{"url":"http://[::ffff:127.0.0.1]/h","events":["invoice.issued"]}`,
		"compat v4":  `{"url":"http://[::127.0.0.1]/h","events":["invoice.issued"]}`,
		"nat64":      `{"url":"http://[64:ff9b::7f00:1]/h","events":["invoice.issued"]}`,
		"6to4":       `{"url":"http://[2002:7f00:1::1]/h","events":["invoice.issued"]}`,
		"this net":   `{"url":"http://0.1.2.3/h","events":["invoice.issued"]}`,
		"broadcast":  `{"url":"http://255.255.255.255/h","events":["invoice.issued"]}`,
	} {
		r := e.do("POST", "/v1/webhooks", e.all, body)
		if r.status != http.StatusUnprocessableEntity {
			t.Errorf("%s: status %d, want 422; %s", name, r.status, r.body)
		}
	}
	r := e.do("POST", "/v1/webhooks", e.all, `{"url":"http://127.0.0.1/h","events":["invoice.issued"]}`)
	e.wantError(r, http.StatusUnprocessableEntity, "webhook_url_forbidden")
	for _, hint := range []string{"--webhook-allow-private", "INVOICED_WEBHOOK_ALLOW_PRIVATE"} {
		if !strings.Contains(string(r.body), hint) {
			t.Errorf("the refusal of a loopback URL does not name %s: %s", hint, r.body)
		}
	}
	e.wantError(e.do("POST", "/v1/webhooks", e.issue, `{"url":"http://127.0.0.1/h","events":["invoice.issued"]}`), http.StatusForbidden, "forbidden")
	// A webhook receives every invoice in full: a key that may manage but
	// not read may not register one (it could then read every invoice).
	manage := mustKey(t, e.pool, e.seller.ID, apikey.ScopeManage)
	r = e.do("POST", "/v1/webhooks", manage, `{"url":"https://hooks.example.com/h","events":["invoice.issued"]}`)
	e.wantError(r, http.StatusForbidden, "forbidden")
	if !strings.Contains(string(r.body), "lacks the read scope") {
		t.Errorf("the refusal of a manage-only key does not name read: %s", r.body)
	}
	var n int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM webhooks`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d webhooks registered (%v)", n, err)
	}
	e.wantStatus(e.do("GET", "/v1/webhooks", manage, ""), http.StatusOK)

	p := setup(t, func(c *Config) { c.WebhookAllowPrivate = true })
	w := p.registerWebhook("http://127.0.0.1:9/h", "invoice.cancelled", "invoice.issued", "invoice.issued")
	if strings.Join(w.Events, ",") != "invoice.cancelled,invoice.issued" || !strings.HasPrefix(w.Secret, "whsec_") {
		t.Fatalf("webhook %+v", w)
	}
	r = p.do("GET", "/v1/webhooks", p.all, "")
	p.wantStatus(r, http.StatusOK)
	if strings.Contains(string(r.body), "whsec_") || !strings.Contains(string(r.body), w.ID) {
		t.Fatalf("listing %s shows a secret or misses the webhook", r.body)
	}
}
