package offline_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/gst"
)

// TestOneHolderAtATime: devices racing to lease one series; exactly one
// gets it, every other is 409 lease_held.
func TestOneHolderAtATime(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const n = 8
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := e.all.Lease(t.Context(), "T07", "till-"+itoa(i))
			var ce *client.Error
			switch {
			case err == nil:
				won.Add(1)
			case errors.As(err, &ce) && ce.Status == http.StatusConflict && ce.Code == client.CodeLeaseHeld:
			default:
				t.Errorf("lease %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d devices hold T07, want 1", won.Load())
	}
}

// TestLeaseTakenDuringOnlineIssuance: a lease taken while clients issue
// online in the series continues after every invoice that committed: no
// online invoice lands after the lease's next serial, so the device's
// first upload is a continuation and the series verifies.
func TestLeaseTakenDuringOnlineIssuance(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first, err := e.all.IssueInvoice(ctx, "T07", sale(0))
	if err != nil {
		t.Fatal(err)
	}
	var issued atomic.Int64
	issued.Add(1)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, err := e.all.IssueInvoice(ctx, "T07", sale(0))
				var ce *client.Error
				switch {
				case err == nil:
					issued.Add(1)
				case errors.As(err, &ce) && ce.Code == client.CodeSeriesLeased:
					return
				case ctx.Err() != nil:
					return
				default:
					t.Errorf("online issue: %v", err)
					return
				}
			}
		})
	}
	for issued.Load() < 20 {
		time.Sleep(time.Millisecond)
	}
	l, err := e.all.Lease(ctx, "T07", "till-7")
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// Cancelling appends to the chain the device continues: refused too.
	_, err = e.all.CancelInvoice(t.Context(), first.ID, "wrong buyer")
	wantCode(t, err, http.StatusConflict, client.CodeSeriesLeased)
	if l.Next.Serial != issued.Load()+1 {
		t.Fatalf("lease continues at %d after %d online invoices", l.Next.Serial, issued.Load())
	}
	// The device's clock is behind the server's: its invoices take the
	// last online issue time instead.
	clk := &clock{time.Date(2026, 11, 29, 7, 0, 0, 0, gst.IST)}
	term, err := offline.Create(t.TempDir()+"/j", l, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	for range 5 {
		if _, err := term.Issue(sale(0)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := term.End(t.Context(), e.all); err != nil {
		t.Fatal(err)
	}
	wantExactly(t, e.serials(t, 2026), int(issued.Load())+5)
	e.verify(t)
}

// TestLostLeaseAnswerIsUsable: the answer to a lease is lost after the
// server took it. Asked again, the manager gets the lease (its position,
// floor and format: what offline.Create needs), and the till sells and
// ends on it; the series is never left held by a lease nobody has.
func TestLostLeaseAnswerIsUsable(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	var posts atomic.Int64
	mgr := e.clientDropping(func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/lease") && posts.Add(1) == 1
	})
	l, err := mgr.Lease(ctx, "T07", "till-7")
	if err != nil {
		t.Fatalf("the lease asked again after its answer was lost: %v", err)
	}
	clk := &clock{time.Date(2026, 11, 29, 18, 30, 0, 0, gst.IST)}
	term, err := offline.Create(filepath.Join(e.dir, "till-7.journal"), l, clk.now)
	if err != nil {
		t.Fatalf("offline.Create with the lease asked again: %v", err)
	}
	defer term.Close()
	if r, err := term.Issue(sale(0)); err != nil || r.Number != "T07/26-27/00001" {
		t.Fatalf("sale: %+v, %v", r, err)
	}
	if l, err := term.End(ctx, e.all); err != nil || l.EndSerial != 1 {
		t.Fatalf("End: %+v, %v", l, err)
	}
	// A second lease of the series by another call is still refused while
	// a lease holds it.
	if _, err := e.all.Lease(ctx, "T07", "till-8"); err != nil {
		t.Fatal(err)
	}
	_, err = mgr.Lease(ctx, "T07", "till-7")
	wantCode(t, err, http.StatusConflict, client.CodeLeaseHeld)
}
