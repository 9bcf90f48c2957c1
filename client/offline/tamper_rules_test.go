package offline_test

import (
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
)

// forge numbers sale(0) as serial at chain position after prev (hex) at
// at, with the invoice date, totals and chain hash the server computes for
// exactly that: a tampered upload that breaks one rule only.
func forge(t *testing.T, l client.Lease, serial, position int64, prev string, at time.Time) client.DeviceInvoice {
	t.Helper()
	g, err := gst.ParseGSTIN(l.SellerGSTIN)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gst.ParseFormat(l.Format)
	if err != nil {
		t.Fatal(err)
	}
	dt, err := gst.ParseDocType(l.DocType)
	if err != nil {
		t.Fatal(err)
	}
	head, err := hex.DecodeString(prev)
	if err != nil {
		t.Fatal(err)
	}
	req := sale(0)
	r := document.Request{InvoiceDate: gst.DateIST(at)}
	for _, it := range req.Items {
		r.Items = append(r.Items, document.ItemInput{Description: it.Description, HSN: it.HSN, Quantity: it.Quantity, UnitPrice: it.UnitPrice, GSTRate: it.GSTRate})
	}
	inv, hash, err := document.NumberOffline(gst.Seller{GSTIN: g, StateCode: g.StateCode()}, gst.Series{Code: l.Series, DocType: dt, Format: f}, r, serial, position, head, at)
	if err != nil {
		t.Fatal(err)
	}
	m := inv.Totals
	return client.DeviceInvoice{Serial: serial, Number: inv.Number, InvoiceDate: inv.InvoiceDate.Format(time.DateOnly), IssuedAt: document.Timestamp(at),
		Items: req.Items, PlaceOfSupply: inv.PlaceOfSupply, ChainHash: hex.EncodeToString(hash),
		Totals: client.Totals{Taxable: document.Money(m.Taxable), CGST: document.Money(m.CGST), SGST: document.Money(m.SGST), IGST: document.Money(m.IGST), Total: document.Money(m.Total)}}
}

// TestTamperedUploadsNameTheRule: each order rule of an upload is proved
// on its own. The tampered invoice carries the chain hash and totals the
// server computes for what it says, so only the rule under test can
// refuse it, and the refusal must name that rule's field: an invoice date
// before the previous invoice's, an issue time before the previous
// invoice's on the same day, a date after the server's tomorrow. The
// honest invoice is then accepted.
func TestTamperedUploadsNameTheRule(t *testing.T) {
	t.Parallel()
	srv := &clock{time.Date(2026, 11, 29, 10, 0, 0, 0, gst.IST)}
	e := setupAt(t, srv.now)
	ctx := t.Context()
	l, err := e.all.Lease(ctx, "T07", "till-7")
	if err != nil {
		t.Fatal(err)
	}
	srv.t = time.Date(2026, 11, 30, 20, 0, 0, 0, gst.IST)
	first := forge(t, l, 1, 1, "", time.Date(2026, 11, 30, 10, 0, 0, 0, gst.IST))
	if _, err := e.all.UploadDeviceInvoices(ctx, "T07", l.LeaseID, []client.DeviceInvoice{first}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		at    time.Time
		field string
		rule  string
	}{
		{"date going back", time.Date(2026, 11, 29, 12, 0, 0, 0, gst.IST), "invoices[0].invoice_date", "the previous invoice's"},
		{"issue time going back", time.Date(2026, 11, 30, 9, 0, 0, 0, gst.IST), "invoices[0].issued_at", "the previous invoice's"},
		{"date in the future", time.Date(2026, 12, 5, 9, 0, 0, 0, gst.IST), "invoices[0].invoice_date", "in the future"},
	} {
		inv := forge(t, l, 2, 2, first.ChainHash, c.at)
		_, err := e.all.UploadDeviceInvoices(ctx, "T07", l.LeaseID, []client.DeviceInvoice{inv})
		wantRefusal(t, c.name, err, http.StatusUnprocessableEntity, "invalid_invoice", c.field)
		wantRefusal(t, c.name, err, http.StatusUnprocessableEntity, "invalid_invoice", c.rule)
		if got := e.serials(t, 2026); len(got) != 1 {
			t.Fatalf("%s: %d invoices stored, want 1", c.name, len(got))
		}
	}
	honest := forge(t, l, 2, 2, first.ChainHash, time.Date(2026, 11, 30, 11, 0, 0, 0, gst.IST))
	if r, err := e.all.UploadDeviceInvoices(ctx, "T07", l.LeaseID, []client.DeviceInvoice{honest}); err != nil || r.Stored != 1 {
		t.Fatalf("honest: %+v, %v", r, err)
	}
	e.verify(t)
}
