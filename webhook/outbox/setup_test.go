package outbox

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
)

// testNow is 2026-11-29 10:00 IST: the tests' invoices are issued, and
// their events dated, by this clock.
var testNow = time.Date(2026, 11, 29, 10, 0, 0, 0, gst.IST)

// env is what a test needs: a fresh database with a seller and its
// series CH1.
type env struct {
	t      *testing.T
	pool   *pgxpool.Pool
	seller gst.Seller
	series gst.Series
}

// setup returns an env on a fresh database.
func setup(t *testing.T) *env {
	t.Helper()
	pool := dbtest.New(t)
	seller := testfactory.Seller(t, pool, nil)
	return &env{t: t, pool: pool, seller: seller, series: testfactory.Series(t, pool, seller, nil)}
}

// addSeller creates a seller whose GSTIN starts with first14 (the check
// character is computed) and its series CH1, and returns them.
func (e *env) addSeller(first14 string) (gst.Seller, gst.Series) {
	e.t.Helper()
	s := testfactory.Seller(e.t, e.pool, &testfactory.SellerOpts{GSTIN: testfactory.GSTIN(e.t, first14)})
	return s, testfactory.Series(e.t, e.pool, s, nil)
}

// registerWebhook registers a webhook of seller for url and events and
// returns it, with its secret.
func (e *env) registerWebhook(seller gst.Seller, url string, events ...string) Webhook {
	e.t.Helper()
	w, err := CreateWebhook(e.t.Context(), e.pool, seller.ID, url, events, "whsec_test")
	if err != nil {
		e.t.Fatalf("register a webhook: %v", err)
	}
	return w
}

// mustIssue issues an invoice of s, dated testNow, and returns it; its
// event is recorded when seller has a webhook for invoice.issued.
func (e *env) mustIssue(seller gst.Seller, s gst.Series) document.Invoice {
	e.t.Helper()
	d := testfactory.Draft(e.t, seller, s, testNow, nil)
	inv, err := invoice.Issue(e.t.Context(), e.pool, seller, s, d, testNow, testfactory.Options(e.t, series.Options{}))
	if err != nil {
		e.t.Fatalf("issue: %v", err)
	}
	return inv
}

// deliveryState returns the state and attempts of the env's only delivery.
func (e *env) deliveryState() (string, int) {
	e.t.Helper()
	var state string
	var attempts int
	if err := e.pool.QueryRow(e.t.Context(), `SELECT state, attempts FROM webhook_deliveries`).Scan(&state, &attempts); err != nil {
		e.t.Fatal(err)
	}
	return state, attempts
}

// testEvent is the body testBody gives a delivery.
type testEvent struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// testBody is the tests' DelivererConfig.Body: the event's database id
// and type (the HTTP API's form is api.EventBody, tested in api).
func testBody(ev Event) ([]byte, error) {
	return json.Marshal(testEvent{ID: fmt.Sprintf("%d.%s", ev.ID, ev.Type), Type: ev.Type})
}

// newDeliverer returns NewDeliverer(cfg) with testBody, reading events'
// ages by the clock that dated them (testNow) moved on by age: were it
// the real clock, the events would age with the calendar.
func newDeliverer(age time.Duration, cfg DelivererConfig) *Deliverer {
	cfg.Body = testBody
	cfg.Now = func() time.Time { return testNow.Add(age) }
	return NewDeliverer(cfg)
}
