package offline_test

import (
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/gst"
)

// TestOfflineCancelsUpload: a terminal cancels invoices already uploaded
// and invoices not yet uploaded, by number and by serial, survives a
// reopen of its journal, and syncs: the server holds exactly the
// cancellations the terminal made, in its chain, the seller verifies, and
// each cancellation queued the same invoice.cancelled event as an online
// cancel does.
func TestOfflineCancelsUpload(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	if _, err := e.all.CreateWebhook(ctx, client.WebhookRequest{URL: "http://127.0.0.1:9/hook", Events: []string{client.EventInvoiceCancelled}}); err != nil {
		t.Fatal(err)
	}
	clk := &clock{time.Date(2026, 11, 29, 9, 0, 0, 0, gst.IST)}
	term := e.terminal(t, "till-7", clk)
	issue := func(n int) {
		for i := range n {
			if _, err := term.Issue(sale(i)); err != nil {
				t.Fatal(err)
			}
			clk.t = clk.t.Add(time.Minute)
		}
	}
	issue(3)
	if _, err := term.Sync(ctx, e.all); err != nil {
		t.Fatal(err)
	}
	if _, err := term.Cancel("2", "wrong buyer"); err != nil { // uploaded already
		t.Fatal(err)
	}
	issue(3)
	clk.t = clk.t.Add(-time.Hour) // the clock goes back: the cancellation's time does not
	c5, err := term.Cancel("T07/26-27/00005", "customer returned")
	if err != nil {
		t.Fatal(err)
	}
	if last := clk.t.Add(time.Hour - time.Minute); c5.CancelledAt.Before(last) {
		t.Fatalf("cancelled at %v, before the last invoice's %v", c5.CancelledAt, last)
	}
	if _, err := term.Cancel("5", "again"); !errors.Is(err, offline.ErrAlreadyCancelled) {
		t.Fatalf("second cancel: %v", err)
	}
	if _, err := term.Cancel("T07/26-27/00099", "unknown"); !errors.Is(err, offline.ErrUnknownInvoice) {
		t.Fatalf("unknown invoice: %v", err)
	}
	if _, err := term.Cancel("1", ""); err == nil {
		t.Fatal("a cancel without a reason was journaled")
	}
	issue(1)
	if _, err := term.Cancel("T07/26-27/00001", "duplicate sale"); err != nil {
		t.Fatal(err)
	}
	// A power cut: the journal alone says what was cancelled.
	term.Close()
	term, err = offline.Open(filepath.Join(e.dir, "till-7.journal"), clk.now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { term.Close() })
	if n := term.Pending(); n != 7 { // invoices 4..7 and three cancellations
		t.Fatalf("%d pending after reopen, want 7", n)
	}
	if _, err := term.End(ctx, e.all); err != nil {
		t.Fatal(err)
	}
	wantExactly(t, e.serials(t, 2026), 7)
	mine := term.Cancelled()
	slices.Sort(mine)
	if got := e.cancelled(t); !slices.Equal(got, mine) || len(got) != 3 {
		t.Fatalf("server cancelled %v, terminal cancelled %v", got, mine)
	}
	e.verify(t)
	// The series is back online: an online cancel queues the same event.
	found, err := e.all.FindInvoices(ctx, "T07/26-27/00003")
	if err != nil || len(found) != 1 {
		t.Fatalf("find: %v, %v", found, err)
	}
	if _, err := e.all.CancelInvoice(ctx, found[0].ID, "online"); err != nil {
		t.Fatal(err)
	}
	var events int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM events e JOIN invoices i ON i.id = e.invoice_id
		WHERE e.type = 'invoice.cancelled' AND i.status = 'cancelled'`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != 4 {
		t.Fatalf("%d invoice.cancelled events, want 4 (3 offline, 1 online)", events)
	}
	e.verify(t)
}

// TestTamperedCancelUploadsStoreNothing: each way of changing a
// cancellation the device made is refused, 409 (with where the series
// stands) or 422 naming the cancellation and field, and nothing of the
// batch is stored; the honest batch is then accepted, re-sending it
// replays, and cancelling a cancelled invoice again is refused.
func TestTamperedCancelUploadsStoreNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	clk := &clock{time.Date(2026, 11, 29, 9, 0, 0, 0, gst.IST)}
	term := e.terminal(t, "till-7", clk)
	for i := range 4 {
		if _, err := term.Issue(sale(i)); err != nil {
			t.Fatal(err)
		}
		clk.t = clk.t.Add(time.Hour)
	}
	if _, err := term.Sync(ctx, e.all); err != nil {
		t.Fatal(err)
	}
	var honest []client.DeviceCancel
	for _, ref := range []string{"2", "3"} {
		r, err := term.Cancel(ref, "wrong buyer")
		if err != nil {
			t.Fatal(err)
		}
		clk.t = clk.t.Add(time.Minute)
		honest = append(honest, client.DeviceCancel{FY: r.FY, Position: r.Position, Serial: r.Serial, Number: r.Number,
			CancelledAt: r.CancelledAt.UTC().Format("2006-01-02T15:04:05.000000Z"), Reason: "wrong buyer", ChainHash: r.ChainHash})
	}
	lease := term.Lease().LeaseID
	tamper := func(f func(b []client.DeviceCancel) []client.DeviceCancel) []client.DeviceCancel {
		return f(append([]client.DeviceCancel(nil), honest...))
	}
	for _, c := range []struct {
		name   string
		batch  []client.DeviceCancel
		status int
		code   string
		field  string
	}{
		{"forged chain hash", tamper(func(b []client.DeviceCancel) []client.DeviceCancel {
			b[1].ChainHash = "00" + b[1].ChainHash[2:]
			return b
		}), 422, "invalid_invoice", "cancels[1].chain_hash"},
		{"changed reason", tamper(func(b []client.DeviceCancel) []client.DeviceCancel { b[0].Reason = "other"; return b }), 422, "invalid_invoice", "cancels[0].chain_hash"},
		{"unknown serial", tamper(func(b []client.DeviceCancel) []client.DeviceCancel {
			b[1].Serial, b[1].Number = 9, "T07/26-27/00009"
			return b
		}), 422, "invalid_invoice", "cancels[1].serial"},
		{"double cancel in one batch", tamper(func(b []client.DeviceCancel) []client.DeviceCancel {
			b[1].Serial, b[1].Number = b[0].Serial, b[0].Number
			return b
		}), 422, "invalid_invoice", "cancels[1].serial"},
		{"wrong number", tamper(func(b []client.DeviceCancel) []client.DeviceCancel { b[0].Number = "T07/26-27/00004"; return b }), 422, "invalid_invoice", "cancels[0].number"},
		{"time going back", tamper(func(b []client.DeviceCancel) []client.DeviceCancel {
			b[1].CancelledAt = "2026-11-29T03:00:00.000000Z" // before invoice 4's issue
			return b
		}), 422, "invalid_invoice", "cancels[1].cancelled_at"},
		{"skipped position", tamper(func(b []client.DeviceCancel) []client.DeviceCancel { return b[1:] }), 409, client.CodeNotContinuation, "position"},
		{"reused position", tamper(func(b []client.DeviceCancel) []client.DeviceCancel { b[1].Position = b[0].Position; return b }), 409, client.CodeNotContinuation, "position"},
	} {
		_, err := e.all.UploadDeviceCancels(ctx, "T07", lease, c.batch)
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != c.status || ce.Code != c.code || !strings.Contains(ce.Message, c.field) {
			t.Fatalf("%s: %v, want %d %s naming %s", c.name, err, c.status, c.code, c.field)
		}
		if c.code == client.CodeNotContinuation {
			var cont *client.ContinuationError
			if !errors.As(err, &cont) || cont.Expected.ChainLength != 4 || cont.Expected.Serial != 5 {
				t.Fatalf("%s: expected %+v", c.name, cont)
			}
		}
		if got := e.cancelled(t); len(got) != 0 || e.chainLength(t) != 4 {
			t.Fatalf("%s: %v cancelled, chain of %d records; want nothing stored", c.name, got, e.chainLength(t))
		}
	}
	r, err := e.all.UploadDeviceCancels(ctx, "T07", lease, honest)
	if err != nil || r.Stored != 2 || r.Replayed != 0 || r.Next.ChainLength != 6 {
		t.Fatalf("honest: %+v, %v", r, err)
	}
	r, err = e.all.UploadDeviceCancels(ctx, "T07", lease, honest)
	if err != nil || r.Stored != 0 || r.Replayed != 2 {
		t.Fatalf("again: %+v, %v", r, err)
	}
	again := honest[0]
	again.Position, again.CancelledAt = 7, "2026-11-29T12:00:00.000000Z"
	_, err = e.all.UploadDeviceCancels(ctx, "T07", lease, []client.DeviceCancel{again})
	wantCode(t, err, http.StatusUnprocessableEntity, "invalid_invoice")
	if got := e.cancelled(t); !slices.Equal(got, []string{"T07/26-27/00002", "T07/26-27/00003"}) || e.chainLength(t) != 6 {
		t.Fatalf("after a double cancel: %v cancelled, chain of %d", got, e.chainLength(t))
	}
	e.verify(t)
}

// cancelled returns the numbers of T07's cancelled invoices, in order.
func (e *env) cancelled(t *testing.T) []string {
	t.Helper()
	rows, err := e.pool.Query(t.Context(), `SELECT i.number FROM invoices i JOIN series s ON s.id = i.series_id
		WHERE s.code = 'T07' AND i.status = 'cancelled' ORDER BY i.number`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// chainLength returns how many chain records T07 holds.
func (e *env) chainLength(t *testing.T) int {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM chain_records r JOIN series s ON s.id = r.series_id WHERE s.code = 'T07'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
