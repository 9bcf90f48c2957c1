package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/lease"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
	"github.com/invoiced/invoiced/webhook/outbox"
	"github.com/jackc/pgx/v5"
)

// This file holds the systematic tenancy test (docs/threat-model.md,
// "Tenant isolation"): two sellers with the same series codes, the same
// invoice numbers, the same idempotency keys and the same webhook URL;
// every read route of the API and every store function is asked by each,
// and no answer may name the other. Each route and each store function
// must be classified here: a new one fails the test until it is.

// tenant is one of the two sellers and what it holds.
type tenant struct {
	name          string
	seller        gst.Seller
	key           string // every scope
	ch1, ls1, op1 gst.Series
	ids           []int64 // internal ids of CH1/26-27/00001..00003 (2 cancelled)
	date          string  // their invoice date
	locked        document.Month
	webhook       string // wh_…
	lease         lease.Lease
	markers       []string // strings only this seller's answers may hold
}

// mixed returns s (a series of another seller) as if it were x's: a
// caller that resolved the wrong series must still get nothing, since
// every query is scoped by the seller too.
func (x *tenant) mixed(s gst.Series) gst.Series {
	s.SellerID = x.seller.ID
	return s
}

// tenancyFixture builds the two sellers through the API, as clients
// would, and returns them.
func tenancyFixture(t *testing.T) (*env, *tenant, *tenant) {
	t.Helper()
	ctx := t.Context()
	e := setup(t, func(c *Config) { c.BackdateDays = 60; c.WebhookAllowPrivate = true })
	dbtest.SetClock(t, e.pool, testNow) // locked months have ended by the database's clock too
	b := testfactory.Seller(t, e.pool, &testfactory.SellerOpts{GSTIN: otherGSTIN, Name: "Mysuru Silk House"})
	a := &tenant{name: "A", seller: e.seller, key: e.all, date: "2026-11-29", locked: document.MonthOf(day(t, "2026-10-01"))}
	bb := &tenant{name: "B", seller: b, key: mustKey(t, e.pool, b.ID, apikey.ScopeIssue, apikey.ScopeRead, apikey.ScopeManage),
		date: "2026-11-28", locked: document.MonthOf(day(t, "2026-09-01"))}
	var err error
	if a.ch1, err = series.Get(ctx, e.pool, a.seller.ID, "CH1"); err != nil {
		t.Fatal(err)
	}
	bb.ch1 = testfactory.Series(t, e.pool, b, &testfactory.SeriesOpts{Code: "CH1", Format: "CH1/{FY}/{SEQ:5}", Shop: "Mysuru market stall"})
	for _, x := range []*tenant{a, bb} {
		place := map[string]string{"A": "Pune", "B": "Mysuru"}[x.name]
		x.ls1 = testfactory.Series(t, e.pool, x.seller, &testfactory.SeriesOpts{Code: "LS1", Format: "LS1/{FY}/{SEQ:5}", Shop: place + " lease stall"})
		x.op1 = testfactory.Series(t, e.pool, x.seller, &testfactory.SeriesOpts{Code: "OP1", Format: "OP1/{FY}/{SEQ:5}", Shop: place + " opening stall"})
		prefixes := []string{x.key[3:11]}
		if x == a {
			prefixes = append(prefixes, e.read[3:11], e.issue[3:11])
		}
		x.markers = append(x.markers, string(x.seller.GSTIN), place, x.name+"-buyer Stores", x.name+"-reason wrong buyer", "TILL-"+x.name)
		for _, p := range prefixes {
			x.markers = append(x.markers, "ik_"+p)
		}

		// The same webhook URL for both, registered before the invoices
		// so that their events are recorded.
		r := e.do("POST", "/v1/webhooks", x.key, `{"url":"https://127.0.0.1:9/invoiced","events":["invoice.issued","invoice.cancelled"]}`)
		e.wantStatus(r, http.StatusCreated)
		var wh struct{ ID, Secret string }
		if err := json.Unmarshal(r.body, &wh); err != nil || wh.ID == "" || wh.Secret == "" {
			t.Fatalf("webhook of %s: %s (%v)", x.name, r.body, err)
		}
		x.webhook = wh.ID
		x.markers = append(x.markers, wh.ID, wh.Secret)

		// The same numbers and the same keys: B's first use of A's keys
		// is a fresh issue, not a replay and not a reuse.
		for i := 1; i <= 3; i++ {
			body := `{"invoice_date":"` + x.date + `","buyer":{"name":"` + x.name + `-buyer Stores"},"items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]}`
			r := e.do("POST", "/v1/series/CH1/invoices", x.key, body, "Idempotency-Key", fmt.Sprintf("order-%d", i))
			e.wantStatus(r, http.StatusCreated)
			inv := e.invoice(r)
			if r.header.Get(headerReplayed) != "" || inv.Number != fmt.Sprintf("CH1/26-27/%05d", i) {
				t.Fatalf("%s's invoice with key order-%d: %s %v, want a fresh CH1/26-27/%05d", x.name, i, inv.Number, r.header.Get(headerReplayed), i)
			}
			x.markers = append(x.markers, inv.PublicID)
			id, err := invoice.IDBySerial(ctx, e.pool, x.seller.ID, x.ch1.ID, 2026, inv.Serial)
			if err != nil {
				t.Fatal(err)
			}
			x.ids = append(x.ids, id)
		}
		e.wantStatus(e.do("POST", "/v1/invoices/CH1-2026-2/cancel", x.key, `{"reason":"`+x.name+`-reason wrong buyer"}`), http.StatusOK)
		e.wantStatus(e.do("POST", "/v1/periods/"+x.locked.FP()+"/lock", x.key, ""), http.StatusCreated)
		if x.lease, err = lease.TakeLease(ctx, e.pool, x.ls1, "TILL-"+x.name, "key ik_"+x.key[3:11], testNow); err != nil {
			t.Fatal(err)
		}
		x.markers = append(x.markers, x.lease.ID)
		err = pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
			_, err := invoice.DeclareOpeningTx(ctx, tx, x.seller, x.op1, invoice.Opening{FY: 2026, LastSerial: 41,
				LastInvoiceDate: day(t, "2026-11-01"), LastNumber: "OP1/26-27/00041"}, "key ik_"+x.key[3:11], testNow)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return e, a, bb
}

func day(t *testing.T, s string) time.Time {
	t.Helper()
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// namesOnly fails the test unless what (an answer, rendered) holds a
// marker of x and none of y's.
func namesOnly(t *testing.T, what, got string, x, y *tenant) {
	t.Helper()
	for _, m := range y.markers {
		if strings.Contains(got, m) {
			t.Errorf("%s asked by %s names %s (%q):\n%.2000s", what, x.name, y.name, m, got)
			return
		}
	}
	for _, m := range x.markers {
		if strings.Contains(got, m) {
			return
		}
	}
	t.Errorf("%s asked by %s names neither seller, so it proves nothing:\n%.2000s", what, x.name, got)
}

// nothing fails the test unless v, err (an answer to x about y's
// objects) is a not-found error or an empty value, and it names nothing
// of y's.
func nothing(t *testing.T, what string, v any, err error, x, y *tenant) {
	t.Helper()
	if err != nil {
		if apperr.KindOf(err) != apperr.NotFound {
			t.Errorf("%s asked by %s about %s's objects: %v; want not found", what, x.name, y.name, err)
		}
		return
	}
	if v == nil {
		return
	}
	empty := false
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Slice, reflect.Map, reflect.String:
		empty = rv.Len() == 0
	default:
		empty = rv.IsZero()
	}
	if !empty {
		t.Errorf("%s asked by %s about %s's objects answers %+v; want nothing", what, x.name, y.name, v)
	}
}

// render returns v as text for namesOnly: its JSON (every exported field,
// through pointers; a String method would hide the fields) and err.
// eventsProbe is the probe of a store function that lists a seller's
// events one at a time: each, asked for x's events, passes each to add;
// the list may name only x, and holds x's four (three issued, one
// cancelled).
func eventsProbe(name string, each func(x *tenant, add func(any)) error) storeProbe {
	return func(t *testing.T, x, y *tenant) {
		var v []any
		err := each(x, func(e any) { v = append(v, e) })
		namesOnly(t, name, render(v, err), x, y)
		if len(v) != 4 {
			t.Errorf("%s by %s: %d events, want its 4 (3 issued, 1 cancelled)", name, x.name, len(v))
		}
	}
}

func render(v any, err error) string {
	b, jerr := json.Marshal(v)
	if jerr != nil {
		return fmt.Sprintf("%+v (err %v)", v, err)
	}
	return fmt.Sprintf("%s (err %v)", b, err)
}

// routeProbe says how the tenancy test treats a route: the paths a
// seller's key asks (own reads, and reads naming the other's objects,
// which must be 404), or why the route is not read per seller.
type routeProbe struct {
	own    func(x, y *tenant) []string // paths whose answers must name x only
	others func(x, y *tenant) []string // paths naming y's objects: 404
	method string                      // for others: the method (default GET)
	body   string
	why    string // a route asked by neither: why
}

// tenancyRoutes classifies every route of the API.
var tenancyRoutes = map[string]routeProbe{
	"GET /v1/series": {own: paths("/v1/series")},
	"GET /v1/series/:code/invoices": {own: paths("/v1/series/CH1/invoices?fy=2026-27",
		"/v1/series/CH1/invoices?fy=2026-27&from=2026-11-01&to=2026-11-30")},
	"GET /v1/invoices": {own: paths("/v1/invoices?number=CH1/26-27/00001", "/v1/invoices?number=ch1/26-27/00002")},
	"GET /v1/invoices/:id": {own: paths("/v1/invoices/CH1-2026-1", "/v1/invoices/CH1-2026-2"),
		others: func(x, y *tenant) []string { return []string{"/v1/invoices/" + strconv.FormatInt(y.ids[0], 10)} }},
	"GET /v1/webhooks": {own: paths("/v1/webhooks")},
	"GET /v1/events":   {own: paths("/v1/events", "/v1/events?limit=1000")},
	"GET /v1/series/:code/audit": {own: paths("/v1/series/CH1/audit?fy=2026-27&format=csv",
		"/v1/series/CH1/audit?fy=2026-27&format=json", "/v1/series/CH1/audit?fy=2026-27&format=csv&part=summary",
		"/v1/series/OP1/audit?fy=2026-27&format=json")},
	"GET /v1/periods":                 {own: paths("/v1/periods")},
	"GET /v1/reports/gstr1/doc-issue": {own: paths("/v1/reports/gstr1/doc-issue?fp=112026", "/v1/reports/gstr1/doc-issue?fp=2026-27-Q3")},
	"GET /v1/series/:code/lease":      {own: paths("/v1/series/LS1/lease")},
	"POST /v1/invoices/:id/cancel": {method: "POST", body: `{"reason":"x"}`, others: func(x, y *tenant) []string {
		return []string{"/v1/invoices/" + strconv.FormatInt(y.ids[0], 10) + "/cancel"}
	}},
	"DELETE /v1/webhooks/:id":               {method: "DELETE", others: func(x, y *tenant) []string { return []string{"/v1/webhooks/" + y.webhook} }},
	"GET /healthz":                          {why: "no key, no data"},
	"GET /readyz":                           {why: "no key, no data"},
	"GET /openapi.yaml":                     {why: "no key, no data"},
	"GET /metrics":                          {why: "process-wide metrics with closed label sets, no seller"},
	"GET /debug/stats":                      {why: "process-wide counters, no seller (docs/threat-model.md)"},
	"GET /r/:public_id":                     {why: "no key: the public id is the capability (docs/public-ids.md)"},
	"POST /v1/series":                       {why: "a write under the key's seller: another's code is free (TestTenantIsolation)"},
	"POST /v1/series/:code/invoices":        {why: "a write; the fixture issues the same numbers and keys for both"},
	"POST /v1/series/:code/invoices/batch":  {why: "a write under the key's seller's series (TestIssueBatch*)"},
	"POST /v1/webhooks":                     {why: "a write; the fixture registers the same URL for both"},
	"POST /v1/periods/:fp/lock":             {why: "a write under the key's seller; the fixture locks a month for each"},
	"POST /v1/series/:code/lease":           {why: "a write under the key's seller's series (lease tests)"},
	"DELETE /v1/series/:code/lease":         {why: "a write under the key's seller's series (lease tests)"},
	"POST /v1/series/:code/lease/resume":    {why: "a write under the key's seller's series (lease tests)"},
	"POST /v1/series/:code/device-invoices": {why: "a write under the key's seller's series and lease (lease tests)"},
	"POST /v1/series/:code/device-cancels":  {why: "a write under the key's seller's series and lease (lease tests)"},
}

func paths(ps ...string) func(x, y *tenant) []string {
	return func(*tenant, *tenant) []string { return ps }
}

// TestEveryReadRouteNamesOnlyItsSeller walks the API's route table: each
// read route is asked by each seller's key, and its answer names that
// seller and never the other; a route naming the other's object by id
// answers 404. A route missing from tenancyRoutes fails the test.
func TestEveryReadRouteNamesOnlyItsSeller(t *testing.T) {
	t.Parallel()
	e, a, b := tenancyFixture(t)
	routes := New(e.cfg).Routes()
	seen := map[string]bool{}
	for _, r := range routes {
		name := r.Method + " " + r.Path
		seen[name] = true
		probe, ok := tenancyRoutes[name]
		if !ok {
			t.Errorf("route %s is not classified in tenancyRoutes: say how a seller reads it, or why no seller does", name)
			continue
		}
		if probe.why != "" {
			continue
		}
		if probe.own == nil && probe.others == nil {
			t.Errorf("route %s has neither probes nor a reason", name)
		}
		for _, pair := range [][2]*tenant{{a, b}, {b, a}} {
			x, y := pair[0], pair[1]
			if probe.own != nil {
				for _, p := range probe.own(x, y) {
					resp := e.do("GET", p, x.key, "")
					if resp.status != http.StatusOK {
						t.Errorf("GET %s by %s: %d %s", p, x.name, resp.status, resp.body)
						continue
					}
					namesOnly(t, "GET "+p, string(resp.body), x, y)
				}
			}
			if probe.others != nil {
				method := cmp.Or(probe.method, "GET")
				for _, p := range probe.others(x, y) {
					resp := e.do(method, p, x.key, probe.body)
					if resp.status != http.StatusNotFound {
						t.Errorf("%s %s (%s's object) by %s: %d %s; want 404", method, p, y.name, x.name, resp.status, resp.body)
					}
					for _, m := range y.markers {
						if strings.Contains(string(resp.body), m) {
							t.Errorf("%s %s by %s names %s (%q): %s", method, p, x.name, y.name, m, resp.body)
						}
					}
				}
			}
		}
	}
	for name := range tenancyRoutes {
		if !seen[name] {
			t.Errorf("tenancyRoutes classifies %s, which the API no longer has", name)
		}
	}
	// Identical findings: each seller's number finds exactly its own invoice.
	for _, x := range []*tenant{a, b} {
		resp := e.do("GET", "/v1/invoices?number=CH1/26-27/00001", x.key, "")
		var list struct{ Invoices []invoiceOut }
		if err := json.Unmarshal(resp.body, &list); err != nil || len(list.Invoices) != 1 {
			t.Errorf("%s finds CH1/26-27/00001: %s (%v); want exactly its own", x.name, resp.body, err)
		}
	}
}

// storeProbe asks a store function as seller x, with y the other seller.
type storeProbe func(t *testing.T, x, y *tenant)

// TestEveryStoreReadNamesOnlyItsSeller: every exported store function
// (one that takes a context and a database handle) of the packages that
// hold tenant data is classified: a read is asked by each seller, with its
// own identifiers (its answer names it only) and, where it takes internal
// ids, with the other's (nothing); a function that is no per-seller read
// says why. The list is read from the source, so a new store function
// fails the test until it is classified here.
func TestEveryStoreReadNamesOnlyItsSeller(t *testing.T) {
	t.Parallel()
	e, a, b := tenancyFixture(t)
	ctx := t.Context()
	pool := e.pool
	fy := gst.FY(2026)
	nov, err := reports.ParsePeriod("112026")
	if err != nil {
		t.Fatal(err)
	}
	// Each seller's keys order-1..3 are its own, whatever the other
	// used (TestIdempotencyKeysAreTheSellers holds the details).
	claimedKeys := func(t *testing.T, x, y *tenant) {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			out, err := invoice.ClaimKeys(ctx, tx, []invoice.KeyClaim{{SellerID: x.seller.ID, Key: "order-1", RequestHash: []byte("another body")}})
			if err != nil {
				return err
			}
			if !errors.Is(out[0].Err, invoice.ErrKeyReused) {
				t.Errorf("invoice.ClaimKeys by %s of its order-1 with another body: %+v; want ErrKeyReused", x.name, out[0])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	reads := map[string]storeProbe{
		"invoice.Get": func(t *testing.T, x, y *tenant) {
			v, err := invoice.Get(ctx, pool, x.seller.ID, x.ids[0])
			namesOnly(t, "invoice.Get", render(v, err), x, y)
			v, err = invoice.Get(ctx, pool, x.seller.ID, y.ids[0])
			nothing(t, "invoice.Get", v, err, x, y)
		},
		"invoice.EachEvent": eventsProbe("invoice.EachEvent", func(x *tenant, add func(any)) error {
			return invoice.EachEvent(ctx, pool, x.seller.ID, 0, 1000, func(_ int64, _ string, _ time.Time, inv document.Invoice) error {
				add(inv)
				return nil
			})
		}),
		"invoice.IDBySerial": func(t *testing.T, x, y *tenant) {
			id, err := invoice.IDBySerial(ctx, pool, x.seller.ID, x.ch1.ID, fy, 1)
			if err != nil || id != x.ids[0] {
				t.Errorf("invoice.IDBySerial by %s: %d, %v; want %d", x.name, id, err, x.ids[0])
			}
			id, err = invoice.IDBySerial(ctx, pool, x.seller.ID, y.ch1.ID, fy, 1)
			nothing(t, "invoice.IDBySerial", id, err, x, y)
		},
		"invoice.List": func(t *testing.T, x, y *tenant) {
			v, err := invoice.List(ctx, pool, x.ch1, fy, 0, 100)
			namesOnly(t, "invoice.List", render(v, err), x, y)
			v, err = invoice.List(ctx, pool, x.mixed(y.ch1), fy, 0, 100)
			nothing(t, "invoice.List", v, err, x, y)
		},
		"invoice.ListDated": func(t *testing.T, x, y *tenant) {
			r := invoice.DateRange{From: day(t, "2026-11-01"), To: day(t, "2026-11-30")}
			v, err := invoice.ListDated(ctx, pool, x.ch1, fy, r, 0, 100)
			namesOnly(t, "invoice.ListDated", render(v, err), x, y)
			v, err = invoice.ListDated(ctx, pool, x.mixed(y.ch1), fy, r, 0, 100)
			nothing(t, "invoice.ListDated", v, err, x, y)
		},
		"invoice.EachDated": func(t *testing.T, x, y *tenant) {
			r := invoice.DateRange{From: day(t, "2026-11-01"), To: day(t, "2026-11-30")}
			each := func(s gst.Series) ([]document.Invoice, error) {
				var v []document.Invoice
				err := invoice.EachDated(ctx, pool, s, fy, r, 0, 100, func(inv document.Invoice) error {
					v = append(v, inv)
					return nil
				})
				return v, err
			}
			v, err := each(x.ch1)
			namesOnly(t, "invoice.EachDated", render(v, err), x, y)
			v, err = each(x.mixed(y.ch1))
			nothing(t, "invoice.EachDated", v, err, x, y)
		},
		"invoice.FindByNumber": func(t *testing.T, x, y *tenant) {
			v, err := invoice.FindByNumber(ctx, pool, x.seller.ID, "CH1/26-27/00001")
			namesOnly(t, "invoice.FindByNumber", render(v, err), x, y)
			if len(v) != 1 {
				t.Errorf("invoice.FindByNumber by %s: %d invoices, want its one", x.name, len(v))
			}
		},
		"invoice.CheckOriginal": func(t *testing.T, x, y *tenant) {
			note := func(date string) *document.Draft {
				return &document.Draft{Original: &document.Original{Number: "CH1/26-27/00001", InvoiceDate: day(t, date)}}
			}
			if err := invoice.CheckOriginal(ctx, pool, x.seller, note(x.date)); err != nil {
				t.Errorf("invoice.CheckOriginal by %s of its own invoice: %v", x.name, err)
			}
			if err := invoice.CheckOriginal(ctx, pool, x.seller, note(y.date)); !errors.Is(err, invoice.ErrOriginalNotFound) {
				t.Errorf("invoice.CheckOriginal by %s of %s's invoice (same number, %s's date): %v; want ErrOriginalNotFound", x.name, y.name, y.name, err)
			}
		},
		"invoice.OpeningOf": func(t *testing.T, x, y *tenant) {
			o, found, err := invoice.OpeningOf(ctx, pool, x.op1, fy)
			if !found {
				t.Errorf("invoice.OpeningOf by %s: not found (%v)", x.name, err)
			}
			namesOnly(t, "invoice.OpeningOf", render(o, err), x, y)
			o, found, err = invoice.OpeningOf(ctx, pool, x.mixed(y.op1), fy)
			if found {
				t.Errorf("invoice.OpeningOf by %s of %s's series: %+v", x.name, y.name, o)
			}
			nothing(t, "invoice.OpeningOf", nil, err, x, y)
		},
		"invoice.PeriodLocks": func(t *testing.T, x, y *tenant) {
			v, err := invoice.PeriodLocks(ctx, pool, x.seller.ID)
			namesOnly(t, "invoice.PeriodLocks", render(v, err), x, y)
		},
		"invoice.PeriodEvents": func(t *testing.T, x, y *tenant) {
			v, err := invoice.PeriodEvents(ctx, pool, x.seller.ID)
			namesOnly(t, "invoice.PeriodEvents", render(v, err), x, y)
		},
		"invoice.CheckPeriod": func(t *testing.T, x, y *tenant) {
			if err := invoice.CheckPeriod(ctx, pool, x.seller, x.locked.Start(), testNow); !errors.Is(err, invoice.ErrPeriodLocked) {
				t.Errorf("invoice.CheckPeriod by %s of its locked %s: %v", x.name, x.locked, err)
			}
			if err := invoice.CheckPeriod(ctx, pool, x.seller, y.locked.Start(), testNow); err != nil {
				t.Errorf("invoice.CheckPeriod by %s of %s, which only %s locked: %v", x.name, y.locked, y.name, err)
			}
		},
		"invoice.ClaimKey":  claimedKeys,
		"invoice.ClaimKeys": claimedKeys,
		"series.Get": func(t *testing.T, x, y *tenant) {
			v, err := series.Get(ctx, pool, x.seller.ID, "CH1")
			namesOnly(t, "series.Get", render(v, err), x, y)
		},
		"series.GetByID": func(t *testing.T, x, y *tenant) {
			v, err := series.GetByID(ctx, pool, x.seller.ID, x.ch1.ID)
			namesOnly(t, "series.GetByID", render(v, err), x, y)
			v, err = series.GetByID(ctx, pool, x.seller.ID, y.ch1.ID)
			nothing(t, "series.GetByID", v, err, x, y)
		},
		"series.List": func(t *testing.T, x, y *tenant) {
			v, err := series.List(ctx, pool, x.seller.ID)
			namesOnly(t, "series.List", render(v, err), x, y)
		},
		"series.Counter": func(t *testing.T, x, y *tenant) {
			u, err := series.Counter(ctx, pool, x.seller.ID, x.ch1.ID, fy)
			if err != nil || u.LastSerial != 3 {
				t.Errorf("series.Counter by %s: %+v, %v; want last serial 3", x.name, u, err)
			}
			u, err = series.Counter(ctx, pool, x.seller.ID, y.ch1.ID, fy)
			nothing(t, "series.Counter", u, err, x, y)
		},
		"series.LockChain": func(t *testing.T, x, y *tenant) {
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if n, _, err := series.LockChain(ctx, tx, x.seller.ID, x.ch1.ID, fy, series.Options{}); err != nil || n != 4 {
					t.Errorf("series.LockChain by %s: length %d, %v; want 4", x.name, n, err)
				}
				n, _, err := series.LockChain(ctx, tx, x.seller.ID, y.ch1.ID, fy, series.Options{})
				nothing(t, "series.LockChain", n, err, x, y)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		},
		"lease.NextPosition": func(t *testing.T, x, y *tenant) {
			p, err := lease.NextPosition(ctx, pool, x.ch1, fy)
			if err != nil || p.Serial != 4 {
				t.Errorf("lease.NextPosition by %s: %+v, %v; want serial 4", x.name, p, err)
			}
		},
		"lease.GetLease": func(t *testing.T, x, y *tenant) {
			v, err := lease.GetLease(ctx, pool, x.ls1, x.lease.ID)
			namesOnly(t, "lease.GetLease", render(v, err), x, y)
			v, err = lease.GetLease(ctx, pool, x.ls1, y.lease.ID)
			nothing(t, "lease.GetLease", v, err, x, y)
			v, err = lease.GetLease(ctx, pool, x.mixed(y.ls1), y.lease.ID)
			nothing(t, "lease.GetLease", v, err, x, y)
		},
		"lease.HolderLease": func(t *testing.T, x, y *tenant) {
			v, err := lease.HolderLease(ctx, pool, x.ls1)
			namesOnly(t, "lease.HolderLease", render(v, err), x, y)
			v, err = lease.HolderLease(ctx, pool, x.mixed(y.ls1))
			nothing(t, "lease.HolderLease", v, err, x, y)
		},
		"lease.Leases": func(t *testing.T, x, y *tenant) {
			v, err := lease.Leases(ctx, pool, x.ls1)
			namesOnly(t, "lease.Leases", render(v, err), x, y)
			v, err = lease.Leases(ctx, pool, x.mixed(y.ls1))
			nothing(t, "lease.Leases", v, err, x, y)
		},
		"lease.SellerLeases": func(t *testing.T, x, y *tenant) {
			holding, past, err := lease.SellerLeases(ctx, pool, x.seller.ID, 10)
			namesOnly(t, "lease.SellerLeases", render([]any{holding, past}, err), x, y)
		},
		"lease.CheckLease": func(t *testing.T, x, y *tenant) {
			if err := lease.CheckLease(ctx, pool, x.ls1, x.lease.ID); err != nil {
				t.Errorf("lease.CheckLease by %s of its lease: %v", x.name, err)
			}
			if err := lease.CheckLease(ctx, pool, x.ls1, y.lease.ID); err == nil {
				t.Errorf("lease.CheckLease by %s of %s's lease id passes", x.name, y.name)
			}
		},
		"lease.LockLeaseTx": func(t *testing.T, x, y *tenant) {
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				v, err := lease.LockLeaseTx(ctx, tx, x.ls1, x.lease.ID)
				namesOnly(t, "lease.LockLeaseTx", render(v, err), x, y)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				v, err := lease.LockLeaseTx(ctx, tx, x.mixed(y.ls1), y.lease.ID)
				if err == nil {
					t.Errorf("lease.LockLeaseTx by %s of %s's lease: %+v", x.name, y.name, v)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		},
		"reports.WriteAudit": func(t *testing.T, x, y *tenant) {
			for _, format := range []string{reports.FormatCSV, reports.FormatJSON} {
				var buf bytes.Buffer
				err := reports.WriteAudit(ctx, pool, x.seller, x.ch1, fy, format, &buf)
				namesOnly(t, "reports.WriteAudit "+format, render(buf.String(), err), x, y)
				buf.Reset()
				err = reports.WriteAudit(ctx, pool, x.seller, x.mixed(y.ch1), fy, format, &buf)
				nothing(t, "reports.WriteAudit "+format, buf.String(), err, x, y)
			}
		},
		"reports.WriteAuditSummary": func(t *testing.T, x, y *tenant) {
			var buf bytes.Buffer
			err := reports.WriteAuditSummary(ctx, pool, x.seller, x.op1, fy, reports.FormatJSON, &buf)
			namesOnly(t, "reports.WriteAuditSummary", render(buf.String(), err), x, y)
			buf.Reset()
			err = reports.WriteAuditSummary(ctx, pool, x.seller, x.mixed(y.ch1), fy, reports.FormatJSON, &buf)
			nothing(t, "reports.WriteAuditSummary", buf.String(), err, x, y)
		},
		"reports.AuditSummary": func(t *testing.T, x, y *tenant) {
			v, err := reports.AuditSummary(ctx, pool, x.seller, x.ch1, fy)
			namesOnly(t, "reports.AuditSummary", render(v, err), x, y)
			v, err = reports.AuditSummary(ctx, pool, x.seller, x.mixed(y.ch1), fy)
			if err == nil && (v.Total != 0 || v.ChainLength != 0) {
				t.Errorf("reports.AuditSummary by %s of %s's series: %+v; want nothing", x.name, y.name, v)
			}
		},
		"reports.AuditRows": func(t *testing.T, x, y *tenant) {
			v, err := reports.AuditRows(ctx, pool, x.ch1, fy, reports.RowQuery{Limit: 100})
			namesOnly(t, "reports.AuditRows", render(v, err), x, y)
			v, err = reports.AuditRows(ctx, pool, x.mixed(y.ch1), fy, reports.RowQuery{Limit: 100})
			nothing(t, "reports.AuditRows", v, err, x, y)
			v, err = reports.AuditRows(ctx, pool, x.ch1, fy, reports.RowQuery{Limit: 100, Number: "CH1/26-27/00001"})
			namesOnly(t, "reports.AuditRows by number", render(v, err), x, y)
		},
		"reports.SeriesActivity": func(t *testing.T, x, y *tenant) {
			v, err := reports.SeriesActivity(ctx, pool, x.seller, day(t, x.date))
			namesOnly(t, "reports.SeriesActivity", render(v, err), x, y)
		},
		"reports.SeriesYearHead": func(t *testing.T, x, y *tenant) {
			v, err := reports.SeriesYearHead(ctx, pool, x.seller, x.ch1, fy)
			if err != nil || v.LastSerial != 3 {
				t.Errorf("reports.SeriesYearHead by %s: %+v, %v", x.name, v, err)
			}
			v, err = reports.SeriesYearHead(ctx, pool, x.seller, x.mixed(y.ch1), fy)
			nothing(t, "reports.SeriesYearHead", v, err, x, y)
		},
		"reports.DocIssue": func(t *testing.T, x, y *tenant) {
			v, err := reports.DocIssue(ctx, pool, x.seller, nov)
			namesOnly(t, "reports.DocIssue", render(v, err), x, y)
			// Its documents only: CH1 1..3, one cancelled (the same
			// numbers as the other's, so counted, not named).
			var got []string
			for _, d := range v.DocIssue.DocDet {
				for _, r := range d.Docs {
					got = append(got, fmt.Sprintf("%s..%s %d-%d", r.From, r.To, r.TotNum, r.Cancel))
				}
			}
			if want := "CH1/26-27/00001..CH1/26-27/00003 3-1"; strings.Join(got, ", ") != want {
				t.Errorf("reports.DocIssue by %s for November: %v; want its own %s", x.name, got, want)
			}
		},
		"reports.Verify": func(t *testing.T, x, y *tenant) {
			v, err := reports.Verify(ctx, pool, x.seller, "", 0)
			if err != nil || !v.OK() {
				t.Errorf("reports.Verify by %s: %v %+v", x.name, err, v.Findings())
			}
			n := 0
			for _, c := range v.Chains {
				n += int(c.Invoices)
			}
			if n != 3 {
				t.Errorf("reports.Verify by %s: %d invoices in its chains, want its 3", x.name, n)
			}
		},
		"outbox.EachEvent": eventsProbe("outbox.EachEvent", func(x *tenant, add func(any)) error {
			return outbox.EachEvent(ctx, pool, x.seller.ID, 0, 1000, func(ev outbox.Event) error {
				add(ev)
				return nil
			})
		}),
		"outbox.LookupEvent": func(t *testing.T, x, y *tenant) {
			if _, err := outbox.LookupEvent(ctx, pool, x.seller.ID, x.ids[0], invoice.EventIssued); err != nil {
				t.Errorf("outbox.LookupEvent by %s: %v", x.name, err)
			}
			id, err := outbox.LookupEvent(ctx, pool, x.seller.ID, y.ids[0], invoice.EventIssued)
			nothing(t, "outbox.LookupEvent", id, err, x, y)
		},
		"outbox.ListWebhooks": func(t *testing.T, x, y *tenant) {
			v, err := outbox.ListWebhooks(ctx, pool, x.seller.ID)
			namesOnly(t, "outbox.ListWebhooks", render(v, err), x, y)
		},
		"apikey.List": func(t *testing.T, x, y *tenant) {
			v, err := apikey.List(ctx, pool, x.seller.ID)
			namesOnly(t, "apikey.List", render(fmt.Sprint(keyPrefixes(v)), err), x, y)
		},
	}
	// Tx forms are asked through the function they serve.
	for tx, plain := range map[string]string{"reports.WriteAuditTx": "reports.WriteAudit", "reports.AuditSummaryTx": "reports.AuditSummary",
		"reports.DocIssueTx": "reports.DocIssue", "reports.VerifyTx": "reports.Verify"} {
		reads[tx] = reads[plain]
	}
	notReads := map[string]string{
		"invoice.Issue": "writes under the seller and series given", "invoice.IssueTx": "writes", "invoice.IssueManyTx": "writes", "invoice.RecordEventTx": "writes",
		"invoice.Cancel": "writes (another seller's id: TestEveryReadRouteNamesOnlyItsSeller's cancel probe)", "invoice.CancelOnce": "writes", "invoice.CancelTx": "writes",
		"lease.UploadOffline": "writes (offline lease tests)", "lease.UploadOfflineCancels": "writes (offline lease tests)",
		"invoice.LockBySerialTx": "locks for a write (lease.UploadOfflineCancels) by the seller and series given",
		"invoice.CheckPeriodTx":  "reads the period lock of the invoice the caller locked, by its own seller",
		"invoice.LockPeriod":     "writes", "invoice.UnlockPeriod": "writes", "invoice.DeclareOpeningTx": "writes",
		"invoice.PurgeKeys":     "maintenance over every seller by design (a retention cutoff)",
		"invoice.GetByPublicID": "no seller asks: the public id is the capability (docs/public-ids.md)",
		"series.Next":           "takes numbers of the caller's series", "series.NextN": "takes numbers", "series.NextMany": "takes numbers",
		"sellers.Create": "operator command", "sellers.CreateWith": "operator command", "sellers.Update": "operator command",
		"sellers.ByGSTIN": "operator command: the GSTIN names the seller", "sellers.ByID": "the id names the seller (authentication)",
		"sellers.All":         "operator command over every seller",
		"series.CreateSeries": "writes", "series.CreateSeriesTx": "writes",
		"lease.TakeLease": "writes", "lease.TakeLeaseKeyed": "writes",
		"series.DeclarationsOf": "not yet probed: the fixture settles no lease; it reads by (seller_id, series_id) of a series the caller resolved for its seller", "lease.EndLease": "writes", "lease.EndLeaseByDevice": "writes", "lease.ResumeLease": "writes",
		"lease.ForceEndLease": "writes", "lease.SettleLease": "writes", "lease.SettleLeaseYears": "writes", "lease.WriteAsLeaseTx": "writes",
		"outbox.CreateWebhook": "writes", "outbox.DeleteWebhook": "writes (another seller's id: the route probe)",
		"outbox.PurgeEvents": "maintenance over every seller by design (a retention cutoff)",
		"apikey.Create":      "operator command", "apikey.CreateForSeries": "operator command", "apikey.Revoke": "operator command by prefix",
		"apikey.Lookup": "authentication: the prefix names the key, whose secret is then checked",
	}
	for _, name := range storeFunctions(t) {
		probe, ok := reads[name]
		if _, write := notReads[name]; write {
			continue
		}
		if !ok {
			t.Errorf("store function %s is not classified: add a probe to TestEveryStoreReadNamesOnlyItsSeller, or say why no seller reads it", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			probe(t, a, b)
			probe(t, b, a)
		})
	}
}

func keyPrefixes(v []apikey.Info) []string {
	var out []string
	for _, k := range v {
		out = append(out, "ik_"+k.Prefix)
	}
	return out
}

// storeFunctions returns the exported functions, package.Name, of the
// packages holding tenant data that take a context and a database handle
// (db.Querier, db.Beginner, db.OptionsBeginner or pgx.Tx), read from
// their source.
func storeFunctions(t *testing.T) []string {
	t.Helper()
	handles := map[string]bool{"db.Querier": true, "db.Beginner": true, "db.OptionsBeginner": true, "pgx.Tx": true}
	var out []string
	for _, dir := range []string{"../invoice", "../series", "../lease", "../sellers", "../reports", "../webhook/outbox", "../apikey"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Recv != nil || !fn.Name.IsExported() || fn.Type.Params.NumFields() < 2 {
					continue
				}
				var types []string
				for _, p := range fn.Type.Params.List {
					for range max(1, len(p.Names)) {
						types = append(types, exprString(p.Type))
					}
				}
				if types[0] == "context.Context" && handles[types[1]] {
					out = append(out, f.Name.Name+"."+fn.Name.Name)
				}
			}
		}
	}
	sort.Strings(out)
	if len(out) < 60 {
		t.Fatalf("only %d store functions found: %v", len(out), out)
	}
	return out
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	}
	return fmt.Sprintf("%T", e)
}
