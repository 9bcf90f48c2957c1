package registration

import (
	"errors"
	"fmt"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/irpsandbox"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/sellers"
	"github.com/invoiced/invoiced/webhook/outbox"
	"slices"
	"testing"
	"time"
)

// TestRegistersB2BInvoicesOnly: a B2B invoice of an e-invoicing seller is
// pending as soon as it is issued (its event is queued by the issuing
// transaction), then registered with the IRN the IRP computes and its
// signed QR; a B2C invoice needs none and never reaches the IRP.
func TestRegistersB2BInvoicesOnly(t *testing.T) {
	t.Parallel()
	e := setup(t)
	inv := e.issue(b2b())
	sale := e.issue(nil)
	if got := e.get(inv.ID).EInvoice.Status; got != einvoice.StatusPending {
		t.Fatalf("just issued: status %q, want pending", got)
	}
	if got := e.get(sale.ID).EInvoice.Status; got != einvoice.StatusNotApplicable {
		t.Fatalf("a B2C sale: status %q, want not_applicable", got)
	}
	e.settleAll(e.worker(e.pool), 10*time.Second)
	got := e.get(inv.ID).EInvoice
	want := keyOf(e.seller, inv).IRN()
	if got.Status != einvoice.StatusRegistered || got.IRN != want || got.AckNo == "" || got.AckDate.IsZero() || got.SignedQRCode == "" || got.Error != "" {
		t.Fatalf("registered: %+v; want IRN %s with Ack and QR", got, want)
	}
	if r, ok := e.atIRP(inv); !ok || r.Status != "ACT" || r.Requests != 1 {
		t.Fatalf("at the IRP: %+v, %v; want one active registration", r, ok)
	}
	if got := e.get(sale.ID).EInvoice.Status; got != einvoice.StatusNotApplicable {
		t.Fatalf("a B2C sale after the workers: %q", got)
	}
	if n := len(e.irp.Server.Registrations("")); n != 1 {
		t.Fatalf("the IRP holds %d registrations, want 1", n)
	}
	var events int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM events WHERE type = $1`, invoice.EventEInvoiceRegistered).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != 0 {
		t.Fatalf("%d e-invoice events recorded for a seller without webhooks", events)
	}
}

// TestNotQueuedWhenOff: an invoice issued before e-invoicing is turned on,
// or after it is turned off, is not applicable; one queued while it was on
// is still registered after it is turned off.
func TestNotQueuedWhenOff(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	queued := e.issue(b2b())
	if _, err := SetEInvoicing(ctx, e.pool, string(e.seller.GSTIN), false); err != nil {
		t.Fatal(err)
	}
	after := e.issue(b2b())
	if got := e.get(after.ID).EInvoice.Status; got != einvoice.StatusNotApplicable {
		t.Fatalf("issued while off: %q", got)
	}
	e.settleAll(e.worker(e.pool), 10*time.Second)
	if got := e.get(queued.ID).EInvoice.Status; got != einvoice.StatusRegistered {
		t.Fatalf("queued while on: %q, want registered", got)
	}
	if _, ok := e.atIRP(after); ok {
		t.Fatal("an invoice issued while off reached the IRP")
	}
	s, err := SetEInvoicing(ctx, e.pool, string(e.seller.GSTIN), true)
	if err != nil || !s.EInvoicing {
		t.Fatalf("on again: %+v, %v", s, err)
	}
	var live int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM webhooks WHERE kind = 'irp' AND deleted_at IS NULL`).Scan(&live); err != nil || live != 1 {
		t.Fatalf("%d live IRP subscribers, %v", live, err)
	}
}

// TestOnNeedsAddress: e-invoicing is refused for a seller without a
// complete postal address, and the address cannot be cleared while it is
// on.
func TestOnNeedsAddress(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	other := e.addSeller("29AAGCB7383J1Z")
	if _, err := SetEInvoicing(ctx, e.pool, string(other.GSTIN), true); !errors.Is(err, ErrAddressIncomplete) {
		t.Fatalf("on without an address: %v, want ErrAddressIncomplete", err)
	}
	empty := ""
	if _, err := sellers.Update(ctx, e.pool, string(e.seller.GSTIN), sellers.Changes{PIN: &empty}); err == nil {
		t.Fatal("an e-invoicing seller's PIN was cleared")
	}
}

// TestCancelBeforeSendNeedsNoIRP: an invoice cancelled before its
// registration was sent ends cancelled without any call to the IRP.
func TestCancelBeforeSendNeedsNoIRP(t *testing.T) {
	t.Parallel()
	e := setup(t)
	inv := e.issue(b2b())
	c := NewCanceller(e.pool, e.client, e.opt, clientTimeout)
	out, _, err := c.Cancel(t.Context(), e.seller, CancelRequest{CancelRequest: invoice.CancelRequest{ID: inv.ID, Reason: "wrong buyer"}}, time.Now())
	if err != nil || out.Status != document.StatusCancelled || out.EInvoice.Status != einvoice.StatusPending {
		t.Fatalf("cancel: %v, %s/%s", err, out.Status, out.EInvoice.Status)
	}
	e.settleAll(e.worker(e.pool), 10*time.Second)
	if got := e.get(inv.ID).EInvoice.Status; got != einvoice.StatusCancelled {
		t.Fatalf("status %q, want cancelled", got)
	}
	if n := e.irp.Server.Calls(einvoice.OpRegister); n != 0 {
		t.Fatalf("%d registrations sent for an invoice cancelled before", n)
	}
}

// TestCancelRegistered: a registered invoice's cancel within 24 hours
// cancels its IRN, then the invoice; after 24 hours it is refused, the
// invoice left issued; with an e-way bill active, likewise.
func TestCancelRegistered(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.worker(e.pool)
	first, second, third := e.issue(b2b()), e.issue(b2b()), e.issue(b2b())
	e.settleAll(w, 10*time.Second)
	c := NewCanceller(e.pool, e.client, e.opt, clientTimeout)
	ctx := t.Context()
	cancel := func(inv document.Invoice, now time.Time) (document.Invoice, error) {
		out, _, err := c.Cancel(ctx, e.seller, CancelRequest{CancelRequest: invoice.CancelRequest{ID: inv.ID, Reason: "order cancelled"},
			Code: einvoice.CancelOrderCancelled}, now)
		return out, err
	}
	out, err := cancel(first, time.Now())
	if err != nil || out.Status != document.StatusCancelled || out.EInvoice.Status != einvoice.StatusCancelled {
		t.Fatalf("cancel within 24 h: %v, %s/%s", err, out.Status, out.EInvoice.Status)
	}
	if r, _ := e.atIRP(first); r.Status != "CNL" || r.CancelRsn != "3" {
		t.Fatalf("at the IRP: %+v, want cancelled with reason 3", r)
	}
	if r, _ := e.atIRP(second); r.Status != "ACT" {
		t.Fatalf("another invoice's IRN: %+v", r)
	}
	if err := e.irp.Server.SetEWayBill(keyOf(e.seller, third).IRN(), true); err != nil {
		t.Fatal(err)
	}
	if _, err := cancel(third, time.Now()); !errors.Is(err, ErrEWayBillActive) {
		t.Fatalf("with an e-way bill: %v, want ErrEWayBillActive", err)
	}
	if got := e.get(third.ID); got.Status != document.StatusIssued || got.EInvoice.Status != einvoice.StatusRegistered {
		t.Fatalf("refused cancel left %s/%s", got.Status, got.EInvoice.Status)
	}
	if _, err := cancel(second, time.Now().Add(25*time.Hour)); !errors.Is(err, ErrCancelWindowClosed) {
		t.Fatalf("after 24 h: %v, want ErrCancelWindowClosed", err)
	}
	// The IRP's clock judges too: past its 24 hours it refuses (2270),
	// whatever invoiced's clock says.
	e.irp.Server.Advance(25 * time.Hour)
	if _, err := cancel(second, time.Now()); !errors.Is(err, ErrCancelWindowClosed) {
		t.Fatalf("past the IRP's 24 h: %v, want ErrCancelWindowClosed", err)
	}
	if got := e.get(second.ID); got.Status != document.StatusIssued || got.EInvoice.Status != einvoice.StatusRegistered {
		t.Fatalf("refused cancel left %s/%s", got.Status, got.EInvoice.Status)
	}
	if r, _ := e.atIRP(second); r.Status != "ACT" {
		t.Fatalf("refused cancel: the IRN is %s", r.Status)
	}
}

// TestLostCancelAnswerIsFinished: the IRP cancels the IRN but its answer is
// lost: the API answers unavailable, the invoice stays issued until the
// workers ask again (9999, not active: cancelled before) and cancel it.
func TestLostCancelAnswerIsFinished(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.worker(e.pool)
	inv := e.issue(b2b())
	e.settleAll(w, 10*time.Second)
	if err := e.irp.Server.AddFault(irpsandbox.Fault{Op: einvoice.OpCancel, Mode: irpsandbox.DropAfter, Times: 1}); err != nil {
		t.Fatal(err)
	}
	c := NewCanceller(e.pool, e.client, e.opt, clientTimeout)
	_, _, err := c.Cancel(t.Context(), e.seller, CancelRequest{CancelRequest: invoice.CancelRequest{ID: inv.ID, Reason: "duplicate"}, Code: einvoice.CancelDuplicate}, time.Now())
	if !errors.Is(err, ErrIRPUnavailable) {
		t.Fatalf("cancel with its answer lost: %v, want ErrIRPUnavailable", err)
	}
	if got := e.get(inv.ID); got.Status != document.StatusIssued {
		t.Fatalf("the invoice is %s before the IRP's answer is known", got.Status)
	}
	e.settleAll(w, 15*time.Second)
	got := e.get(inv.ID)
	if got.Status != document.StatusCancelled || got.CancelReason != "duplicate" || got.EInvoice.Status != einvoice.StatusCancelled {
		t.Fatalf("after the workers: %s (%q), %s", got.Status, got.CancelReason, got.EInvoice.Status)
	}
	if r, _ := e.atIRP(inv); r.Status != "CNL" || r.CancelRsn != "1" {
		t.Fatalf("at the IRP: %+v", r)
	}
}

// TestInvalidPayloadFails: an invoice whose payload INV-01 refuses ends
// failed with the reason, nothing sent; cancelling it then ends cancelled.
func TestInvalidPayloadFails(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// INV-01 wants a description of at least 3 characters; invoiced takes 1.
	now := time.Now()
	req := &document.Request{Buyer: b2b(), Items: []document.ItemInput{{Description: "Te", HSN: "0902", Quantity: "1", UnitPrice: "10", GSTRate: "5"}}}
	d := e.draft(req, now)
	inv, err := invoice.Issue(t.Context(), e.pool, e.seller, e.series, d, now, e.opt)
	if err != nil {
		t.Fatal(err)
	}
	e.settleAll(e.worker(e.pool), 10*time.Second)
	got := e.get(inv.ID).EInvoice
	if got.Status != einvoice.StatusFailed || got.Error == "" || got.IRN != "" {
		t.Fatalf("refused payload: %+v", got)
	}
	if _, err := invoice.Cancel(t.Context(), e.pool, e.seller, inv.ID, "typo", now, e.opt); err != nil {
		t.Fatal(err)
	}
	e.settleAll(e.worker(e.pool), 10*time.Second)
	if got := e.get(inv.ID).EInvoice.Status; got != einvoice.StatusCancelled {
		t.Fatalf("failed, then cancelled: %q", got)
	}
}

// TestCancelDuringRegistration: an invoice cancelled (as a till does)
// while its registration is in flight: the worker that registers it
// records the IRN, and the cancel's event, taken meanwhile, leaves the row
// due, so that the IRN registered for a cancelled invoice is cancelled.
func TestCancelDuringRegistration(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	w := e.worker(e.pool)
	inv := e.issue(b2b())
	if _, err := takeQueued(ctx, e.pool, e.seller.ID, 10, time.Now()); err != nil {
		t.Fatal(err)
	}
	r, ok, err := claim(ctx, e.pool, e.seller.ID, w.cfg.Lease)
	if err != nil || !ok {
		t.Fatalf("claim: %v, %v", ok, err)
	}
	// The IRP registers at once and answers late, within the timeout.
	if err := e.irp.Server.AddFault(irpsandbox.Fault{Op: einvoice.OpRegister, Mode: irpsandbox.DelayAfter, Delay: clientTimeout / 2, Times: 1}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { w.settle(ctx, r); close(done) }()
	testwaitUntil(t, func() bool { _, ok := e.atIRP(inv); return ok }, "the IRP to register")
	if _, err := invoice.Cancel(ctx, e.pool, e.seller, inv.ID, "returned", time.Now(), e.opt); err != nil {
		t.Fatal(err)
	}
	if _, err := takeQueued(ctx, e.pool, e.seller.ID, 10, time.Now()); err != nil {
		t.Fatal(err)
	}
	<-done
	if got := e.get(inv.ID).EInvoice; got.Status != einvoice.StatusRegistered || got.IRN == "" {
		t.Fatalf("after the registration's answer: %+v", got)
	}
	e.settleAll(w, 10*time.Second)
	if r, _ := e.atIRP(inv); r.Status != "CNL" {
		t.Fatalf("the IRN of the cancelled invoice is %s at the IRP", r.Status)
	}
	if got := e.get(inv.ID).EInvoice.Status; got != einvoice.StatusCancelled {
		t.Fatalf("status %q, want cancelled", got)
	}
}

// testwaitUntil waits up to 10s for cond.
func testwaitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	testwait.Until(t, 10*time.Second, cond, "%s", what)
}

// TestEInvoiceEventsOnce: a seller's webhook subscribed to the e-invoice
// events gets one invoice.e_invoice_registered and, after the cancel, one
// invoice.e_invoice_cancelled, with a delivery each; the IRP subscriber
// gets none of them.
func TestEInvoiceEventsOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	if _, err := outbox.CreateWebhook(ctx, e.pool, e.seller.ID, "https://pos.example.com/hooks",
		[]string{invoice.EventEInvoiceRegistered, invoice.EventEInvoiceCancelled}, "whsec_test"); err != nil {
		t.Fatal(err)
	}
	w := e.worker(e.pool)
	inv := e.issue(b2b())
	e.settleAll(w, 10*time.Second)
	c := NewCanceller(e.pool, e.client, e.opt, clientTimeout)
	if _, _, err := c.Cancel(ctx, e.seller, CancelRequest{CancelRequest: invoice.CancelRequest{ID: inv.ID, Reason: "returned"}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	e.settleAll(w, 10*time.Second)
	rows, err := e.pool.Query(ctx, `
		SELECT ev.type, count(d.*) FROM events ev
		LEFT JOIN webhook_deliveries d ON d.event_id = ev.id AND d.seller_id = ev.seller_id
		WHERE ev.invoice_id = $1 AND ev.type LIKE 'invoice.e_invoice%' GROUP BY ev.type ORDER BY ev.type`, inv.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var typ string
		var n int
		if err := rows.Scan(&typ, &n); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s:%d", typ, n))
	}
	if want := []string{"invoice.e_invoice_cancelled:1", "invoice.e_invoice_registered:1"}; !slices.Equal(got, want) {
		t.Fatalf("e-invoice events with their deliveries: %v, want %v", got, want)
	}
}
