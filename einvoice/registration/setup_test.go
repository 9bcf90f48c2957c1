package registration

import (
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/irp"
	"github.com/invoiced/invoiced/einvoice/irpsandbox"
	"github.com/invoiced/invoiced/einvoice/irpsandbox/sandboxtest"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/sellers"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
	"testing"
	"time"
)

// env is what a test needs: a fresh database with an e-invoicing seller
// and its series CH1 (tax invoices to the Karnataka buyer by default), an
// IRP sandbox and a client of it.
type env struct {
	t      *testing.T
	pool   *pgxpool.Pool
	seller gst.Seller
	series gst.Series
	irp    *sandboxtest.Env
	client *irp.Client
	// opt are the series options of issues and cancels: the routed form
	// on Citus (make test-citus), as serve's there.
	opt series.Options
}

// clientTimeout is the tests' longest wait for one IRP answer.
const clientTimeout = 400 * time.Millisecond

// setup returns an env on a fresh database and sandbox.
func setup(t *testing.T) *env {
	t.Helper()
	pool := dbtest.New(t)
	ctx := t.Context()
	seller := testfactory.Seller(t, pool, nil)
	line1, city, pin := "12 MG Road", "Pune", "411001"
	if _, err := sellers.Update(ctx, pool, string(seller.GSTIN), sellers.Changes{Line1: &line1, City: &city, PIN: &pin}); err != nil {
		t.Fatal(err)
	}
	seller, err := SetEInvoicing(ctx, pool, string(seller.GSTIN), true)
	if err != nil {
		t.Fatal(err)
	}
	sb := sandboxtest.Start(t, irpsandbox.Config{})
	return &env{t: t, pool: pool, seller: seller, series: testfactory.Series(t, pool, seller, nil), irp: sb,
		client: sandboxtest.Client(t, sb.ClientConfig(t, clientTimeout)), opt: series.Options{Routed: dbtest.Citus(t)}}
}

// worker returns a Worker of e over pool with the tests' short waits.
func (e *env) worker(pool *pgxpool.Pool) *Worker {
	return NewWorker(Config{Pool: pool, Registrar: e.client, Options: e.opt, Workers: 2, Poll: 10 * time.Millisecond,
		RetryBase: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond, Timeout: clientTimeout, Lease: 2 * time.Second})
}

// issue issues an invoice of the env's series to buyer (nil: a B2C sale)
// and returns it.
func (e *env) issue(buyer *document.Buyer) document.Invoice {
	e.t.Helper()
	now := time.Now()
	req := &document.Request{Buyer: buyer, Items: []document.ItemInput{testfactory.Chai("2", "10.00", "5")}}
	if buyer == nil {
		req.PlaceOfSupply = "27"
	}
	d := testfactory.Draft(e.t, e.seller, e.series, now, &testfactory.DraftOpts{Request: req})
	inv, err := invoice.Issue(e.t.Context(), e.pool, e.seller, e.series, d, now, e.opt)
	if err != nil {
		e.t.Fatalf("issue: %v", err)
	}
	return inv
}

// b2b returns a copy of the default registered buyer.
func b2b() *document.Buyer {
	b := testfactory.Buyer
	b.Address = testfactory.BuyerAddress()
	return &b
}

// get returns the env seller's invoice id as read now.
func (e *env) get(id int64) document.Invoice {
	e.t.Helper()
	inv, err := invoice.Get(e.t.Context(), e.pool, e.seller.ID, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return inv
}

// settleAll runs w's rounds until no queued event and no due row is left,
// failing the test after timeout.
func (e *env) settleAll(w *Worker, timeout time.Duration) {
	e.t.Helper()
	ctx := e.t.Context()
	deadline := time.Now().Add(timeout)
	for {
		if _, err := w.Round(ctx); err != nil {
			e.t.Fatalf("round: %v", err)
		}
		var left int
		if err := e.pool.QueryRow(ctx, `
			SELECT (SELECT count(*) FROM e_invoices WHERE next_at IS NOT NULL)
				+ (SELECT count(*) FROM webhook_deliveries d JOIN webhooks w ON w.seller_id = d.seller_id AND w.id = d.webhook_id AND w.kind = 'irp' WHERE d.state = 'pending')`).Scan(&left); err != nil {
			e.t.Fatal(err)
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d registrations still have work after %v", left, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// atIRP returns the sandbox's registration of inv, found false when it has
// none.
func (e *env) atIRP(inv document.Invoice) (irpsandbox.Registration, bool) {
	irn := keyOf(e.seller, inv).IRN()
	for _, r := range e.irp.Server.Registrations(string(e.seller.GSTIN)) {
		if r.IRN == irn {
			return r, true
		}
	}
	return irpsandbox.Registration{}, false
}

// keyOf returns the IRP's key of inv, an invoice of seller.
func keyOf(seller gst.Seller, inv document.Invoice) einvoice.DocKey {
	return einvoice.DocKey{GSTIN: string(seller.GSTIN), Type: docType(inv), Number: inv.Number, Date: inv.InvoiceDate}
}

// addSeller creates a seller whose GSTIN starts with first14, without an
// address.
func (e *env) addSeller(first14 string) gst.Seller {
	e.t.Helper()
	return testfactory.Seller(e.t, e.pool, &testfactory.SellerOpts{GSTIN: testfactory.GSTIN(e.t, first14)})
}

// draft prepares req as a draft of the env's series at now.
func (e *env) draft(req *document.Request, now time.Time) document.Draft {
	e.t.Helper()
	return testfactory.Draft(e.t, e.seller, e.series, now, &testfactory.DraftOpts{Request: req})
}
