package offline_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
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

// TestSettledLaterYearNeverNumbersTwice: on 31 March a lost till whose
// clock runs 5 h ahead prints T07/27-28/00001 and 00002; its lease is
// ended by force and settled through 2 in 2027-28. A new till leased at
// 20:20 prints in 2027-28 after midnight: it must continue after the
// declared serials (T07/27-28/00003), not open the year at 1 again.
func TestSettledLaterYearNeverNumbersTwice(t *testing.T) {
	t.Parallel()
	srv := &lockedClock{t: time.Date(2027, 3, 31, 19, 0, 0, 0, gst.IST)}
	e := setupAt(t, srv.now)
	ctx := t.Context()
	var p printed
	lost := &clock{srv.now().Add(5 * time.Hour)}
	l, err := e.all.Lease(ctx, "T07", "till-7")
	if err != nil {
		t.Fatal(err)
	}
	term, err := offline.Create(filepath.Join(e.dir, "lost.journal"), l, lost.now)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r, err := term.Issue(sale(0))
		if err != nil {
			t.Fatal(err)
		}
		p.add(t, r.Number, "the lost till")
	}
	term.Close()
	srv.set(time.Date(2027, 3, 31, 20, 0, 0, 0, gst.IST))
	if _, err := e.all.EndLease(ctx, "T07", "", client.EndLeaseRequest{Force: true, Reason: "till 7 stolen"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.all.EndLease(ctx, "T07", "", client.EndLeaseRequest{
		Declared: []client.YearSerial{{FY: "2026-27", Through: 0}, {FY: "2027-28", Through: 2}}, Reason: "paper roll: 27-28 up to 2"}); err != nil {
		t.Fatal(err)
	}
	srv.set(time.Date(2027, 3, 31, 20, 20, 0, 0, gst.IST))
	clk := &clock{srv.now()}
	fresh := e.terminal(t, "till-8", clk)
	clk.t = time.Date(2027, 4, 1, 0, 5, 0, 0, gst.IST)
	r, err := fresh.Issue(sale(0))
	if err != nil {
		t.Fatal(err)
	}
	p.add(t, r.Number, "the new till")
	if r.Number != "T07/27-28/00003" {
		t.Fatalf("the new till's first invoice of 2027-28 is %s, want T07/27-28/00003 after the declared serials", r.Number)
	}
}
