package console_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/console"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
)

const sellerGSTIN = "27AAPFU0939F1ZV"

// start is the tests' clock at setup: 29 November 2026, 10:00 IST.
var start = time.Date(2026, 11, 29, 10, 0, 0, 0, gst.IST)

// clock is a settable clock.
type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.t.Load()) }
func (c *clock) set(t time.Time)         { c.t.Store(t.UnixNano()) }
func (c *clock) advance(d time.Duration) { c.t.Add(int64(d)) }

// fixture is a server with the API and the console on a fresh database: a
// seller with series CH1 holding invoices 1..5 (dated 2 to 28 November
// 2026) and keys with every scope (all) and read only (read).
type fixture struct {
	url    string
	pool   *pgxpool.Pool
	seller gst.Seller
	ch1    gst.Series
	all    string
	read   string
	clock  *clock
	invs   []document.Invoice
	api    *api.Server
}

func setup(t *testing.T, opts ...func(*api.Config)) *fixture {
	t.Helper()
	ctx := t.Context()
	pool := dbtest.New(t)
	seller := testfactory.Seller(t, pool, &testfactory.SellerOpts{GSTIN: sellerGSTIN, Name: "Pune Chai Co"})
	ch1 := testfactory.Series(t, pool, seller, &testfactory.SeriesOpts{Code: "CH1", Format: "CH1/{FY}/{SEQ:5}", Shop: "Pune station stall"})
	f := &fixture{pool: pool, seller: seller, ch1: ch1, clock: &clock{}}
	f.clock.set(start)
	for i, date := range []string{"2026-11-02", "2026-11-02", "2026-11-10", "2026-11-20", "2026-11-28"} {
		d, _ := time.Parse(time.DateOnly, date)
		req := document.Request{InvoiceDate: d, Buyer: &document.Buyer{Name: "Asha Stores"}, Items: []document.ItemInput{
			{Description: "Masala chai, 250 g", HSN: "0902", Quantity: "4", UnitPrice: "125.50", GSTRate: "5"}}}
		draft, err := document.Prepare(req, seller, ch1, start, document.Policy{BackdateDays: 60})
		if err != nil {
			t.Fatal(err)
		}
		inv, err := invoice.Issue(ctx, pool, seller, ch1, draft, start.Add(time.Duration(i-10)*time.Hour), series.Options{})
		if err != nil {
			t.Fatal(err)
		}
		f.invs = append(f.invs, inv)
	}
	var err error
	if f.all, err = apikey.Create(ctx, pool, seller.ID, []string{apikey.ScopeIssue, apikey.ScopeRead, apikey.ScopeManage}); err != nil {
		t.Fatal(err)
	}
	if f.read, err = apikey.Create(ctx, pool, seller.ID, []string{apikey.ScopeRead}); err != nil {
		t.Fatal(err)
	}
	// No key cache, so that a revoked key ends its sessions at once (with
	// a cache, within its TTL).
	cfg := api.Config{Pool: pool, Now: f.clock.now, KeyCacheTTL: -1}
	for _, o := range opts {
		o(&cfg)
	}
	apiSrv := api.New(cfg)
	f.api = apiSrv
	con := console.New(console.Config{Pool: pool, Keys: apiSrv, Now: f.clock.now})
	mux := http.NewServeMux()
	mux.Handle("/console/", apiSrv.Observe(con)) // as serve wires it
	mux.Handle("/", apiSrv.Handler())
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	f.url = ts.URL
	return f
}

// client returns an HTTP client with a cookie jar that does not follow
// redirects.
func client(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
