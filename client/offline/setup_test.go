package offline_test

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
)

// serverNow is the server's clock: 2026-11-29 18:00 IST.
var serverNow = time.Date(2026, 11, 29, 18, 0, 0, 0, gst.IST)

// env is a real server on a fresh database with a seller and series T07.
type env struct {
	pool   *pgxpool.Pool
	seller gst.Seller
	url    string
	all    *client.Client // issue, read, manage
	key    string
	dir    string
}

func setup(t *testing.T) *env {
	t.Helper()
	return setupAt(t, func() time.Time { return serverNow })
}

// setupAt is setup with the server's clock now.
func setupAt(t *testing.T, now func() time.Time) *env {
	t.Helper()
	return setupRate(t, now, 0)
}

// setupRate is setupAt with the server's per-key rate limit (serve
// --rate-limit; 0: none).
func setupRate(t *testing.T, now func() time.Time, rate float64) *env {
	t.Helper()
	return setupWith(t, api.Config{Now: now, KeyRate: rate})
}

// setupWith is setup with the server configured as cfg (its Pool, and
// the failure rate and webhook policy every test uses, filled in).
func setupWith(t *testing.T, cfg api.Config) *env {
	t.Helper()
	pool := dbtest.New(t)
	seller := testfactory.Seller(t, pool, &testfactory.SellerOpts{Name: "Offline Stall"})
	testfactory.Series(t, pool, seller, &testfactory.SeriesOpts{Code: "T07"})
	cfg.Pool, cfg.FailureRate, cfg.WebhookAllowPrivate = pool, -1, true
	ts := httptest.NewServer(api.New(cfg).Handler())
	t.Cleanup(ts.Close)
	return (&env{pool: pool, url: ts.URL, dir: t.TempDir()}).forSeller(t, seller)
}

// runsPerSeller is how many runs of TestLeaseLifecycleNeverNumbersTwice
// share a seller: each run adds two series, and one seller may have
// series.MaxPerSeller.
const runsPerSeller = series.MaxPerSeller/2 - 1

// anotherSeller returns e for the n-th other seller (n from 1), with a key
// of all scopes, on e's database and server.
func (e *env) anotherSeller(t *testing.T, n int) *env {
	t.Helper()
	seller := testfactory.Seller(t, e.pool, &testfactory.SellerOpts{Name: fmt.Sprintf("Offline Stall %d", n+1),
		GSTIN: testfactory.GSTIN(t, fmt.Sprintf("27AAPFU%04dF1Z", n))})
	return e.forSeller(t, seller)
}

// forSeller returns e for seller, with a new key of all scopes and a
// client of it, on e's database, server and directory.
func (e *env) forSeller(t *testing.T, seller gst.Seller) *env {
	t.Helper()
	key, err := apikey.Create(t.Context(), e.pool, seller.ID, []string{apikey.ScopeIssue, apikey.ScopeRead, apikey.ScopeManage})
	if err != nil {
		t.Fatal(err)
	}
	return &env{pool: e.pool, seller: seller, url: e.url, key: key, dir: e.dir,
		all: client.New(e.url, key, client.WithBackoff(5*time.Millisecond, 50*time.Millisecond))}
}

// clock is a settable device clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// terminal leases T07 to device and opens a journal for it on clk.
func (e *env) terminal(t *testing.T, device string, clk *clock) *offline.Terminal {
	t.Helper()
	l, err := e.all.Lease(t.Context(), "T07", device)
	if err != nil {
		t.Fatal(err)
	}
	term, err := offline.Create(filepath.Join(e.dir, device+".journal"), l, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { term.Close() })
	return term
}

func sale(i int) client.IssueRequest {
	return client.IssueRequest{Items: []client.ItemInput{{Description: "Masala chai", HSN: "0902", Quantity: "2", UnitPrice: "10.00", GSTRate: "5"},
		{Description: "Samosa", HSN: "2106", Quantity: "1", UnitPrice: "15.50", GSTRate: "18"}}}
}

// serials returns the serials stored in T07 in fy, in order.
func (e *env) serials(t *testing.T, fy int) []int64 {
	t.Helper()
	rows, err := e.pool.Query(t.Context(), `SELECT i.serial FROM invoices i JOIN series s ON s.id = i.series_id
		WHERE s.code = 'T07' AND i.fy = $1 ORDER BY i.serial`, fy)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for rows.Next() {
		var s int64
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// verify fails t unless invoiced's verification of the seller passes.
func (e *env) verify(t *testing.T) {
	t.Helper()
	rep, err := reports.Verify(t.Context(), e.pool, e.seller, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify: %+v", rep)
	}
}

// wantExactly fails t unless got is 1..n.
func wantExactly(t *testing.T, got []int64, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%d serials stored, want %d", len(got), n)
	}
	for i, s := range got {
		if s != int64(i+1) {
			t.Fatalf("serial %d at index %d, want 1..%d", s, i, n)
		}
	}
}
