package offline_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/lease"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
)

// TestOfflineThenSync: a device numbers 60 invoices offline, in two
// syncs; the server holds exactly 1..60, verify passes, and online
// issuance (single and batch) is refused while the lease holds and
// continues at 61 after the device ends it.
func TestOfflineThenSync(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	clk := &clock{time.Date(2026, 11, 29, 9, 0, 0, 0, gst.IST)}
	term := e.terminal(t, "till-7", clk)
	for i := range 60 {
		r, err := term.Issue(sale(i))
		if err != nil {
			t.Fatal(err)
		}
		if r.Serial != int64(i+1) || r.Number != "T07/26-27/"+pad5(i+1) {
			t.Fatalf("sale %d numbered %d %s", i, r.Serial, r.Number)
		}
		clk.t = clk.t.Add(time.Minute)
		if i == 29 {
			if n, err := term.Sync(ctx, e.all); err != nil || n != 30 {
				t.Fatalf("first sync: %d, %v", n, err)
			}
		}
	}
	_, err := e.all.IssueInvoice(ctx, "T07", sale(0))
	wantCode(t, err, http.StatusConflict, client.CodeSeriesLeased)
	res, err := e.all.IssueBatch(ctx, "T07", []client.BatchItem{{Items: sale(0).Items}})
	if err != nil || len(res.Results) != 1 || res.Results[0].Error == nil || res.Results[0].Error.Code != client.CodeSeriesLeased {
		t.Fatalf("batch in a leased series: %+v, %v", res, err)
	}
	_, err = e.all.Lease(ctx, "T07", "till-8")
	wantCode(t, err, http.StatusConflict, client.CodeLeaseHeld)

	if n, err := term.Sync(ctx, e.all); err != nil || n != 30 {
		t.Fatalf("second sync: %d, %v", n, err)
	}
	if n, err := term.Sync(ctx, e.all); err != nil || n != 0 {
		t.Fatalf("idle sync: %d, %v", n, err)
	}
	wantExactly(t, e.serials(t, 2026), 60)
	e.verify(t)
	if _, err := term.Issue(sale(0)); err != nil {
		t.Fatal(err)
	}
	l, err := term.End(ctx, e.all)
	if err != nil || l.EndKind != "device" || l.EndSerial != 61 {
		t.Fatalf("end: %+v, %v", l, err)
	}
	if _, err := term.Issue(sale(0)); !errors.Is(err, offline.ErrEnded) {
		t.Fatalf("issue after end: %v", err)
	}
	inv, err := e.all.IssueInvoice(ctx, "T07", sale(0))
	if err != nil || inv.Serial != 62 {
		t.Fatalf("online after the lease: %+v, %v", inv, err)
	}
	wantExactly(t, e.serials(t, 2026), 62)
	e.verify(t)
}

func pad5(n int) string {
	s := "0000" + itoa(n)
	return s[len(s)-5:]
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func wantCode(t *testing.T, err error, status int, code string) {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != status || ce.Code != code {
		t.Fatalf("got %v, want %d %s", err, status, code)
	}
}

// TestTamperedUploadsStoreNothing: each way of changing what the device
// numbered is refused, 409 (with where the series stands) or 422 naming
// the invoice and field, and nothing of the batch is stored; the honest
// batch is then accepted, and re-sending it replays.
func TestTamperedUploadsStoreNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	clk := &clock{time.Date(2026, 11, 29, 9, 0, 0, 0, gst.IST)}
	term := e.terminal(t, "till-7", clk)
	var honest []client.DeviceInvoice
	for i := range 4 {
		r, err := term.Issue(sale(i))
		if err != nil {
			t.Fatal(err)
		}
		clk.t = clk.t.Add(time.Hour)
		honest = append(honest, deviceInvoice(r, sale(i)))
	}
	lease := term.Lease().LeaseID
	if _, err := e.all.UploadDeviceInvoices(ctx, "T07", lease, honest[:1]); err != nil {
		t.Fatal(err)
	}
	rest := honest[1:]
	tamper := func(f func(b []client.DeviceInvoice) []client.DeviceInvoice) []client.DeviceInvoice {
		b := append([]client.DeviceInvoice(nil), rest...)
		for i := range b {
			b[i].Items = append([]client.ItemInput(nil), b[i].Items...)
		}
		return f(b)
	}
	for _, c := range []struct {
		name   string
		batch  []client.DeviceInvoice
		status int
		code   string
	}{
		{"changed total", tamper(func(b []client.DeviceInvoice) []client.DeviceInvoice { b[1].Totals.Total = "99.00"; return b }), 422, "invalid_invoice"},
		{"changed item", tamper(func(b []client.DeviceInvoice) []client.DeviceInvoice { b[2].Items[0].Quantity = "3"; return b }), 422, "invalid_invoice"},
		{"skipped serial", tamper(func(b []client.DeviceInvoice) []client.DeviceInvoice { return append(b[:1], b[2:]...) }), 409, client.CodeNotContinuation},
		{"reused serial", tamper(func(b []client.DeviceInvoice) []client.DeviceInvoice { b[1].Serial = 2; return b }), 409, client.CodeNotContinuation},
		{"reused stored serial", tamper(func(b []client.DeviceInvoice) []client.DeviceInvoice {
			x := b[0]
			x.Serial, x.Number = 1, "T07/26-27/00001"
			return append([]client.DeviceInvoice{x}, b...)
		}), 409, client.CodeNotContinuation},
		{"date going back", tamper(func(b []client.DeviceInvoice) []client.DeviceInvoice {
			b[1].InvoiceDate, b[1].IssuedAt = "2026-11-28", "2026-11-28T04:00:00.000000Z"
			return b
		}), 422, "invalid_invoice"},
		{"forged chain hash", tamper(func(b []client.DeviceInvoice) []client.DeviceInvoice {
			b[2].ChainHash = "00" + b[2].ChainHash[2:]
			return b
		}), 422, "invalid_invoice"},
		{"wrong number", tamper(func(b []client.DeviceInvoice) []client.DeviceInvoice { b[0].Number = "T07/26-27/00009"; return b }), 422, "invalid_invoice"},
	} {
		_, err := e.all.UploadDeviceInvoices(ctx, "T07", lease, c.batch)
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != c.status || ce.Code != c.code {
			t.Fatalf("%s: %v, want %d %s", c.name, err, c.status, c.code)
		}
		if c.code == client.CodeNotContinuation {
			var cont *client.ContinuationError
			if !errors.As(err, &cont) || cont.Expected.Serial != 2 || cont.Expected.ChainHead != honest[0].ChainHash {
				t.Fatalf("%s: expected %+v", c.name, cont)
			}
		}
		if got := e.serials(t, 2026); len(got) != 1 {
			t.Fatalf("%s: %d invoices stored, want 1", c.name, len(got))
		}
	}
	_, err := e.all.UploadDeviceInvoices(ctx, "T07", "ls_aaaaaaaaaaaaaaaaaaaaaaaaaa", rest)
	wantCode(t, err, http.StatusNotFound, "lease_not_found")
	r, err := e.all.UploadDeviceInvoices(ctx, "T07", lease, honest)
	if err != nil || r.Stored != 3 || r.Replayed != 1 || r.Next.Serial != 5 {
		t.Fatalf("honest: %+v, %v", r, err)
	}
	r, err = e.all.UploadDeviceInvoices(ctx, "T07", lease, honest)
	if err != nil || r.Stored != 0 || r.Replayed != 4 {
		t.Fatalf("again: %+v, %v", r, err)
	}
	wantExactly(t, e.serials(t, 2026), 4)
	e.verify(t)
}

// deviceInvoice is what the terminal uploads for receipt r of req.
func deviceInvoice(r offline.Receipt, req client.IssueRequest) client.DeviceInvoice {
	m := r.Invoice.Totals
	return client.DeviceInvoice{Serial: r.Serial, Number: r.Number, InvoiceDate: r.Invoice.InvoiceDate.Format(time.DateOnly),
		IssuedAt: r.IssuedAt.UTC().Format("2006-01-02T15:04:05.000000Z"), Items: req.Items, PlaceOfSupply: r.Invoice.PlaceOfSupply,
		Totals:    client.Totals{Taxable: m.Taxable.StringFixed(2), CGST: m.CGST.StringFixed(2), SGST: m.SGST.StringFixed(2), IGST: m.IGST.StringFixed(2), Total: m.Total.StringFixed(2)},
		ChainHash: r.ChainHash}
}

// TestForcedEndShowsFinding: a lost device's lease is ended by force; the
// audit and Table 13 list the serials it may not have uploaded, the series
// stays held (no online issue, no new lease) until the device uploads late
// and ends its lease; a second forced end is settled by the accountant
// declaring the range, after which the series continues past it.
func TestForcedEndShowsFinding(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	clk := &clock{time.Date(2026, 11, 29, 9, 0, 0, 0, gst.IST)}
	term := e.terminal(t, "till-7", clk)
	for i := range 5 {
		if _, err := term.Issue(sale(i)); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			if _, err := term.Sync(ctx, e.all); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, err := e.all.EndLease(ctx, "T07", "", client.EndLeaseRequest{Force: true})
	wantCode(t, err, http.StatusUnprocessableEntity, "invalid_lease")
	l, err := e.all.EndLease(ctx, "T07", "", client.EndLeaseRequest{Force: true, Reason: "till 7 stolen"})
	if err != nil || l.EndKind != "forced" || l.EndSerial != 3 {
		t.Fatalf("forced end: %+v, %v", l, err)
	}
	sum := e.audit(t)
	if sum.Intact || !hasFinding(sum, reports.DeviceNotUploaded, 4) {
		t.Fatalf("audit after a forced end: %+v", sum.Findings)
	}
	// A warning for each year the lease reserves: a till whose clock ran
	// ahead may have numbered in 2027-28 too.
	rep, err := reports.DocIssue(ctx, e.pool, e.seller, mustPeriod(t, "112026"))
	if err != nil || len(rep.Warnings) != 2 {
		t.Fatalf("Table 13 warnings: %q, %v", rep.Warnings, err)
	}
	_, err = e.all.IssueInvoice(ctx, "T07", sale(0))
	wantCode(t, err, http.StatusConflict, client.CodeSeriesLeased)
	_, err = e.all.Lease(ctx, "T07", "till-8")
	wantCode(t, err, http.StatusConflict, client.CodeLeaseHeld)

	// The device turns up: its late upload and end settle the lease.
	l, err = term.End(ctx, e.all)
	if err != nil || l.SettledAt == "" || l.DeclaredThrough != 5 {
		t.Fatalf("late end: %+v, %v", l, err)
	}
	if sum := e.audit(t); !sum.Intact {
		t.Fatalf("audit after the late upload: %+v", sum.Findings)
	}
	wantExactly(t, e.serials(t, 2026), 5)

	// Another device is lost for good: the accountant declares 6..8 spent.
	term2 := e.terminal(t, "till-8", clk)
	if _, err := term2.Issue(sale(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.all.EndLease(ctx, "T07", "", client.EndLeaseRequest{Force: true, Reason: "till 8 burnt"}); err != nil {
		t.Fatal(err)
	}
	declare := func(n int64) []client.YearSerial {
		return []client.YearSerial{{FY: "2026-27", Through: n}, {FY: "2027-28", Through: 0}}
	}
	_, err = e.all.EndLease(ctx, "T07", "", client.EndLeaseRequest{Declared: declare(4), Reason: "receipts"})
	wantCode(t, err, http.StatusUnprocessableEntity, client.CodeDeclaredTooLow)
	if _, err := e.all.EndLease(ctx, "T07", "", client.EndLeaseRequest{Declared: declare(8), Reason: "paper receipts go to 8"}); err != nil {
		t.Fatal(err)
	}
	inv, err := e.all.IssueInvoice(ctx, "T07", sale(0))
	if err != nil || inv.Serial != 9 {
		t.Fatalf("online after settling: %+v, %v", inv, err)
	}
	// The settlement declared 6..8 in the chain: the year is intact, with
	// them listed as declared, not as a gap (docs/offline.md).
	if sum := e.audit(t); hasFinding(sum, reports.DeviceNotUploaded, 6) || !sum.Intact || len(sum.Gaps) != 0 ||
		len(sum.Declared) != 1 || sum.Declared[0].FirstSerial != 6 || sum.Declared[0].LastSerial != 8 {
		t.Fatalf("audit after settling: intact %v, gaps %+v, declared %+v, findings %+v", sum.Intact, sum.Gaps, sum.Declared, sum.Findings)
	}
}

func (e *env) audit(t *testing.T) reports.Summary {
	t.Helper()
	s, err := series.Get(t.Context(), e.pool, e.seller.ID, "T07")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := reports.AuditSummary(t.Context(), e.pool, e.seller, s, 2026)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func hasFinding(sum reports.Summary, kind reports.FindingKind, serial int64) bool {
	for _, f := range sum.Findings {
		if f.Kind == kind && f.Serial == serial {
			return true
		}
	}
	return false
}

func mustPeriod(t *testing.T, s string) reports.Period {
	t.Helper()
	p, err := reports.ParsePeriod(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLeaseEndKindsAreTheServers: the client's names of how a lease ended
// are the values the server stores and sends (series), so a till that
// compares Lease.EndKind with them compares with what it gets.
func TestLeaseEndKindsAreTheServers(t *testing.T) {
	t.Parallel()
	if client.EndByDevice != lease.EndByDevice || client.EndForced != lease.EndForced {
		t.Fatalf("client (%q, %q) and series (%q, %q) name the lease end kinds differently",
			client.EndByDevice, client.EndForced, lease.EndByDevice, lease.EndForced)
	}
}
