package offline_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/gst"
)

// TestLeaseAtTheYearTurnContinuesTheLaterYear: an invoice of the new
// financial year committed (by a process whose clock runs ahead) before a
// lease taken, by the server's clock, in the last instant of the old year
// puts the device's floor (not_before) in the new year; the lease's
// position is then the new year's, so the till continues after the stored
// serial 1 instead of printing serial 1 again.
func TestLeaseAtTheYearTurnContinuesTheLaterYear(t *testing.T) {
	t.Parallel()
	srv := &lockedClock{t: time.Date(2027, 4, 1, 0, 0, 0, 500_000_000, gst.IST)}
	e := setupAt(t, srv.now)
	ctx := t.Context()
	if _, err := e.all.IssueInvoice(ctx, "T07", sale(0)); err != nil {
		t.Fatal(err)
	}
	eve := time.Date(2027, 3, 31, 23, 59, 59, 900_000_000, gst.IST)
	srv.set(eve)
	l, err := e.all.Lease(ctx, "T07", "till-7")
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{eve.Add(time.Second)} // the till's clock: just past midnight
	term, err := offline.Create(filepath.Join(e.dir, "till-7.journal"), l, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	r, err := term.Issue(sale(1))
	if err != nil {
		t.Fatal(err)
	}
	if r.FY != gst.FY(2027).String() || r.Serial != 2 {
		t.Fatalf("the till printed serial %d of %s (lease next %+v, not_before %s); want serial 2 of %s after the stored serial 1",
			r.Serial, r.FY, *l.Next, l.NotBefore, gst.FY(2027))
	}
	srv.set(eve.Add(time.Minute))
	if _, err := term.End(ctx, e.all); err != nil {
		t.Fatal(err)
	}
	wantExactly(t, e.serials(t, 2027), 2)
	e.verify(t)
}
