package offline_test

import (
	"encoding/hex"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/invoice"
)

// wantRefusal fails t unless err is the answer status with code whose
// message names field.
func wantRefusal(t *testing.T, what string, err error, status int, code, field string) {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != status || ce.Code != code || !strings.Contains(ce.Message, field) {
		t.Fatalf("%s: %v, want %d %s naming %s", what, err, status, code, field)
	}
}

// withoutFloor is l as a device that ignores its time floors (not_before
// and the series' last issue times) would hold it, numbering also in the
// years from before (the first year of l's, a serial 1 of the year before
// it).
func withoutFloor(l client.Lease, before bool) client.Lease {
	next := *l.Next
	next.LastIssuedAt = ""
	l.NotBefore, l.Next = "", &next
	years := []client.Position{next}
	if before {
		fy, _ := gst.ParseFY(next.FY)
		years = []client.Position{{FY: (fy - 1).String(), Serial: 1}}
		l.Next = &years[0]
	}
	l.Years = years
	return l
}

// TestUploadsOutsideTheLeaseStoreNothing: invoices issued before the
// lease was taken or dated in a year before the lease's, cancels of an
// invoice the lease did not number, and cancels of an invoice whose month
// is locked when the cancel arrives are each refused with their own code,
// naming the field, and store nothing.
func TestUploadsOutsideTheLeaseStoreNothing(t *testing.T) {
	t.Parallel()
	srv := &clock{time.Date(2026, 11, 29, 18, 0, 0, 0, gst.IST)}
	e := setupAt(t, srv.now)
	ctx := t.Context()
	online, err := e.all.IssueInvoice(ctx, "T07", sale(0))
	if err != nil {
		t.Fatal(err)
	}
	srv.t = srv.t.Add(time.Hour)
	l, err := e.all.Lease(ctx, "T07", "till-7")
	if err != nil {
		t.Fatal(err)
	}
	if l.NotBefore != document.Timestamp(srv.t) {
		t.Fatalf("not_before %s, want the lease's time %s", l.NotBefore, document.Timestamp(srv.t))
	}
	// A till that ignores the floor, its clock an hour before the lease.
	early := &clock{srv.t.Add(-30 * time.Minute)}
	rogue, err := offline.Create(filepath.Join(e.dir, "rogue"), withoutFloor(l, false), early.now)
	if err != nil {
		t.Fatal(err)
	}
	defer rogue.Close()
	r, err := rogue.Issue(sale(0))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.all.UploadDeviceInvoices(ctx, "T07", l.LeaseID, []client.DeviceInvoice{deviceInvoice(r, sale(0))})
	wantRefusal(t, "issued before the lease", err, http.StatusUnprocessableEntity, client.CodeIssuedBeforeLease, "invoices[0].issued_at")
	// One whose clock is in the year before the lease's.
	lastYear := &clock{time.Date(2026, 3, 31, 23, 0, 0, 0, gst.IST)}
	rogue2, err := offline.Create(filepath.Join(e.dir, "rogue2"), withoutFloor(l, true), lastYear.now)
	if err != nil {
		t.Fatal(err)
	}
	defer rogue2.Close()
	if r, err = rogue2.Issue(sale(0)); err != nil || r.FY != "2025-26" || r.Serial != 1 {
		t.Fatalf("rogue till in 2025-26: %+v, %v", r, err)
	}
	_, err = e.all.UploadDeviceInvoices(ctx, "T07", l.LeaseID, []client.DeviceInvoice{deviceInvoice(r, sale(0))})
	wantRefusal(t, "a year before the lease's", err, http.StatusUnprocessableEntity, client.CodeYearBeforeLease, "invoices[0].invoice_date")
	if got := e.serials(t, 2026); len(got) != 1 {
		t.Fatalf("%d invoices stored in 2026-27, want the online one", len(got))
	}
	if got := e.serials(t, 2025); len(got) != 0 {
		t.Fatalf("%d invoices stored in 2025-26", len(got))
	}

	// A cancel of the invoice issued online before the lease, built right
	// (position, chain head and hash as the server computes them).
	var id int64
	if err := e.pool.QueryRow(ctx, `SELECT id FROM invoices WHERE number = $1`, online.Number).Scan(&id); err != nil {
		t.Fatal(err)
	}
	inv, err := invoice.Get(ctx, e.pool, e.seller.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := hex.DecodeString(l.Next.ChainHead)
	at := srv.t.Add(time.Minute)
	_, hash, err := document.CancelOffline(e.seller.GSTIN, inv, "wrong buyer", at, l.Next.ChainLength+1, head)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.all.UploadDeviceCancels(ctx, "T07", l.LeaseID, []client.DeviceCancel{{FY: "2026-27", Position: l.Next.ChainLength + 1, Serial: inv.Serial,
		Number: inv.Number, CancelledAt: document.Timestamp(at), Reason: "wrong buyer", ChainHash: hex.EncodeToString(hash)}})
	wantRefusal(t, "cancel of an online invoice", err, http.StatusConflict, client.CodeInvoiceNotLeased, "cancels[0].serial")

	// The honest till numbers one in November and uploads it; November is
	// locked in December; its cancel, made after the lock, is refused.
	clk := &clock{srv.t.Add(2 * time.Hour)}
	term, err := offline.Create(filepath.Join(e.dir, "till-7"), l, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	r, err = term.Issue(sale(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := term.Sync(ctx, e.all); err != nil {
		t.Fatal(err)
	}
	srv.t = time.Date(2026, 12, 5, 10, 0, 0, 0, gst.IST)
	if _, err := e.all.LockPeriod(ctx, "112026"); err != nil {
		t.Fatal(err)
	}
	clk.t = srv.t
	if _, err := term.Cancel(r.Number, "customer returned the goods"); err != nil {
		t.Fatal(err)
	}
	// The server refuses it (409 period_locked naming cancels[0].serial);
	// the till voids the cancel and reports it.
	_, err = term.Sync(ctx, e.all)
	var cr *offline.CancelsRefusedError
	if !errors.As(err, &cr) || len(cr.Cancels) != 1 || cr.Cancels[0].Number != r.Number || !strings.Contains(cr.Cancels[0].Reason, "cancels[0].serial") ||
		!strings.Contains(cr.Cancels[0].Reason, "locked") {
		t.Fatalf("cancel in a locked month: %v, want the refusal (409 period_locked naming cancels[0].serial) reported", err)
	}
	var cancelled int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE status = 'cancelled'`).Scan(&cancelled); err != nil || cancelled != 0 {
		t.Fatalf("%d invoices cancelled, %v; want none", cancelled, err)
	}
}

// TestIssueKeyedReplaysTheJournaledSale: a sale journaled and then lost
// before printing (the till restarts) is rung up again under its key and
// gets the same invoice back, to reprint; the key with another sale is
// refused, and the next sale takes the next serial.
func TestIssueKeyedReplaysTheJournaledSale(t *testing.T) {
	t.Parallel()
	clk := &clock{time.Date(2026, 5, 1, 10, 0, 0, 0, gst.IST)}
	path := filepath.Join(t.TempDir(), "j")
	term, err := offline.Create(path, testLease(), clk.now)
	if err != nil {
		t.Fatal(err)
	}
	first, err := term.IssueKeyed("sale-1", sale(0))
	if err != nil || first.Replayed {
		t.Fatalf("first: %+v, %v", first, err)
	}
	term.Close() // the crash between fsync and print
	if term, err = offline.Open(path, clk.now); err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	again, err := term.IssueKeyed("sale-1", sale(0))
	if err != nil || !again.Replayed || again.Number != first.Number || again.ChainHash != first.ChainHash || !again.Invoice.Totals.Total.Equal(first.Invoice.Totals.Total) {
		t.Fatalf("replay: %+v, %v; want %s again", again, err, first.Number)
	}
	other := sale(0)
	other.Items = other.Items[:1]
	if _, err := term.IssueKeyed("sale-1", other); !errors.Is(err, offline.ErrKeyReused) {
		t.Fatalf("the key with another sale: %v, want ErrKeyReused", err)
	}
	next, err := term.IssueKeyed("sale-2", sale(0))
	if err != nil || next.Serial != first.Serial+1 {
		t.Fatalf("next sale: %+v, %v", next, err)
	}
	if term.Numbered() != 2 {
		t.Fatalf("%d invoices journaled, want 2", term.Numbered())
	}
}
