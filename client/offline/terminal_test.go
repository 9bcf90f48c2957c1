package offline_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/testfactory"
)

// testLease is a lease as the server gives it, for tests without a server:
// series T07 starting at serial 1 of 2025-26, and reserving 2026-27.
func testLease() client.Lease {
	return client.Lease{LeaseID: "ls_aaaaaaaaaaaaaaaaaaaaaaaaaa", DeviceID: "till-7", Series: "T07", SellerGSTIN: testfactory.SellerGSTIN,
		DocType: "invoice", Format: "T07/{FY}/{SEQ:5}", Next: &client.Position{FY: "2025-26", Serial: 1},
		Years: []client.Position{{FY: "2025-26", Serial: 1}, {FY: "2026-27", Serial: 1}}}
}

// TestFYTurnsOverAtISTMidnight: the invoice issued at 23:59:59 IST on 31
// March is the last of its year; the one a second later, 00:00 IST on 1
// April by the device's clock, is serial 1 of the next, with a chain of
// its own.
func TestFYTurnsOverAtISTMidnight(t *testing.T) {
	t.Parallel()
	clk := &clock{time.Date(2026, 3, 31, 23, 59, 58, 0, gst.IST)}
	term, err := offline.Create(filepath.Join(t.TempDir(), "j"), testLease(), clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	want := []struct {
		fy     string
		serial int64
		number string
	}{{"2025-26", 1, "T07/25-26/00001"}, {"2025-26", 2, "T07/25-26/00002"}, {"2026-27", 1, "T07/26-27/00001"}, {"2026-27", 2, "T07/26-27/00002"}}
	for i, w := range want {
		r, err := term.Issue(sale(i))
		if err != nil {
			t.Fatal(err)
		}
		if r.FY != w.fy || r.Serial != w.serial || r.Number != w.number {
			t.Fatalf("sale %d at %s: %s %d %s, want %+v", i, clk.t, r.FY, r.Serial, r.Number, w)
		}
		if r.Invoice.InvoiceDate != gst.DateIST(r.IssuedAt) {
			t.Fatalf("sale %d dated %s, issued %s", i, r.Invoice.InvoiceDate, r.IssuedAt)
		}
		clk.t = clk.t.Add(time.Second)
	}
}

// TestClockGoingBackNeverMovesIssueTimesBack: when the device's clock
// jumps back (an hour, then across midnight and the year's end), issue
// times stay at the last one, so dates, years and serials never go back.
func TestClockGoingBackNeverMovesIssueTimesBack(t *testing.T) {
	t.Parallel()
	clk := &clock{time.Date(2026, 4, 1, 0, 0, 5, 0, gst.IST)}
	path := filepath.Join(t.TempDir(), "j")
	term, err := offline.Create(path, testLease(), clk.now)
	if err != nil {
		t.Fatal(err)
	}
	var last offline.Receipt
	steps := []time.Duration{time.Minute, -time.Hour, time.Second, -48 * time.Hour, 2 * time.Hour}
	for i, d := range steps {
		r, err := term.Issue(sale(i))
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && (r.IssuedAt.Before(last.IssuedAt) || r.FY != last.FY || r.Serial != last.Serial+1) {
			t.Fatalf("step %d (clock %s): %s %s %d after %s %s %d", i, clk.t, r.IssuedAt, r.FY, r.Serial, last.IssuedAt, last.FY, last.Serial)
		}
		last = r
		clk.t = clk.t.Add(d)
	}
	// After a restart the floor is the journal's last issue time.
	term.Close()
	clk.t = time.Date(2026, 3, 1, 0, 0, 0, 0, gst.IST)
	term, err = offline.Open(path, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	r, err := term.Issue(sale(0))
	if err != nil || !r.IssuedAt.Equal(last.IssuedAt) || r.FY != "2026-27" || r.Serial != last.Serial+1 {
		t.Fatalf("after restart with the clock in March: %+v, %v", r, err)
	}
}
