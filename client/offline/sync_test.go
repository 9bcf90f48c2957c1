package offline_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/gst"
)

// TestLargeSalesUpload: 100 sales of 250 items each, every one of which
// the online route accepts, upload (in batches under the body limit) and
// the lease ends.
func TestLargeSalesUpload(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	clk := &clock{time.Date(2026, 11, 29, 18, 30, 0, 0, gst.IST)}
	term := e.terminal(t, "till-7", clk)
	big := client.IssueRequest{}
	for i := range 250 {
		big.Items = append(big.Items, client.ItemInput{Description: "Hand-loomed cotton saree, pattern " + itoa(i) + strings.Repeat(" with border", 21),
			HSN: "5208", Quantity: "1", UnitPrice: "12.50", GSTRate: "5"}) // under ₹50,000 a sale: Rule 46(e) asks no address
	}
	for range 100 {
		if _, err := term.Issue(big); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := term.Sync(ctx, e.all); err != nil || n != 100 {
		t.Fatalf("Sync of 100 large sales: %d stored, %v", n, err)
	}
	if l, err := term.End(ctx, e.all); err != nil || l.EndSerial != 100 {
		t.Fatalf("End: %+v, %v", l, err)
	}
	wantExactly(t, e.serials(t, 2026), 100)
}

// TestRefusedCancelStrandsNothing: a till cancels a 30 June invoice
// offline; June is locked on 1 July before the cancel is uploaded, so the
// server refuses it (409 period_locked: the correction is a credit note).
// The till's later sales, in July, must still upload, and its lease end.
func TestRefusedCancelStrandsNothing(t *testing.T) {
	t.Parallel()
	srv := &lockedClock{t: time.Date(2026, 6, 30, 18, 0, 0, 0, gst.IST)}
	e := setupAt(t, srv.now)
	ctx := t.Context()
	clk := &clock{srv.now()}
	term := e.terminal(t, "till-7", clk)
	r, err := term.Issue(sale(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := term.Cancel(r.Number, "customer returned the goods"); err != nil {
		t.Fatal(err)
	}
	srv.set(time.Date(2026, 7, 1, 10, 0, 0, 0, gst.IST))
	clk.t = srv.now()
	if _, err := e.all.LockPeriod(ctx, "062026"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := term.Issue(sale(0)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		_, err := term.End(ctx, e.all)
		t.Logf("End %d: %v", i, err)
		if err == nil {
			break
		}
	}
	if _, err := term.Issue(sale(0)); !errors.Is(err, offline.ErrEnded) {
		t.Fatalf("after End: Issue %v, want ErrEnded: the lease never ended", err)
	}
	wantExactly(t, e.serials(t, 2026), 4)
	if got := e.cancelled(t); len(got) != 0 {
		t.Fatalf("cancelled %v; the June invoice's cancel was refused", got)
	}
	// The till reports the refusal: the invoice stands, to be corrected
	// by a credit note.
	if rc := term.RefusedCancels(); len(rc) != 1 || rc[0].Number != r.Number || !strings.Contains(rc[0].Reason, "locked") {
		t.Fatalf("refused cancels %+v, want %s's", rc, r.Number)
	}
	e.verify(t)
}
