package offline_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/gst"
)

// TestSettledLeaseStopsTheTill: a till's lease is ended by force and
// settled (the accountant declares the serials on paper) while the till
// still sells. Its next upload (by Sync, or by End) is refused 409
// lease_not_held; from then on the till numbers nothing, also after a
// restart, and it reports the serials it never uploaded. When the resume
// of the lease (how the till learns its state) loses its answer the till
// still numbers nothing until a resume answers. Online issuance after the settlement never hands out a number
// the till printed.
func TestSettledLeaseStopsTheTill(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		end      bool // End rather than Sync meets the refusal
		lostRead bool // the first read of the lease loses its answer
	}{{"sync", false, false}, {"end", true, false}, {"sync, the read's answer lost", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			ctx := t.Context()
			clk := &clock{time.Date(2026, 11, 29, 18, 30, 0, 0, gst.IST)}
			path := filepath.Join(e.dir, "till-7.journal")
			l, err := e.all.Lease(ctx, "T07", "till-7")
			if err != nil {
				t.Fatal(err)
			}
			term, err := offline.Create(path, l, clk.now)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { term.Close() }()
			var p printed
			sell := func(who string) error {
				r, err := term.Issue(sale(0))
				if err == nil {
					p.add(t, r.Number, who)
				}
				return err
			}
			for range 2 {
				if err := sell("the till"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := term.Sync(ctx, e.all); err != nil {
				t.Fatal(err)
			}
			for range 3 { // 3..5, never uploaded
				if err := sell("the till"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.all.EndLease(ctx, "T07", "", client.EndLeaseRequest{Force: true, Reason: "till 7 missing"}); err != nil {
				t.Fatal(err)
			}
			paper := []client.YearSerial{{FY: "2026-27", Through: 5}, {FY: "2027-28", Through: 0}} // the paper trail
			if _, err := e.all.EndLease(ctx, "T07", "", client.EndLeaseRequest{Declared: paper, Reason: "paper receipts to 5"}); err != nil {
				t.Fatal(err)
			}
			dev := e.all
			var reads atomic.Int64
			if c.lostRead { // every answer to a resume of the lease is lost
				dev = e.clientDropping(func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/lease/resume") && reads.Add(1) > 0 })
			}
			syncCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
			if c.end {
				_, err = term.End(syncCtx, dev)
			} else {
				_, err = term.Sync(syncCtx, dev)
			}
			cancel()
			t.Logf("after the settlement: %v", err)
			if c.lostRead {
				if !errors.Is(err, offline.ErrLeaseInDoubt) {
					t.Fatalf("Sync with the read's answer lost: %v, want ErrLeaseInDoubt", err)
				}
				if err := sell("the till, the read lost"); !errors.Is(err, offline.ErrLeaseInDoubt) {
					t.Fatalf("Issue with the lease's state unknown: %v, want ErrLeaseInDoubt", err)
				}
				term.Close()
				if term, err = offline.Open(path, clk.now); err != nil {
					t.Fatal(err)
				}
				if err := sell("the till restarted, the read lost"); !errors.Is(err, offline.ErrLeaseInDoubt) {
					t.Fatalf("Issue after a restart with the lease's state unknown: %v, want ErrLeaseInDoubt", err)
				}
				_, err = term.Sync(ctx, e.all)
			}
			checkNotUploaded(t, err, 3, 5)
			if err := sell("the till after the refusal"); !errors.Is(err, offline.ErrEnded) {
				t.Fatalf("Issue after the refused upload: %v, want ErrEnded", err)
			}
			inv, err := e.all.IssueInvoice(ctx, "T07", sale(0))
			if err != nil {
				t.Fatal(err)
			}
			p.add(t, inv.Number, "online after the settlement")
			term.Close()
			if term, err = offline.Open(path, clk.now); err != nil {
				t.Fatal(err)
			}
			if err := sell("the till restarted"); !errors.Is(err, offline.ErrEnded) {
				t.Fatalf("Issue after a restart: %v, want ErrEnded", err)
			}
		})
	}
}

// checkNotUploaded fails t unless err is ErrEnded and names the serials
// from..to as never uploaded.
func checkNotUploaded(t *testing.T, err error, from, to int64) {
	t.Helper()
	var nu *offline.NotUploadedError
	if !errors.Is(err, offline.ErrEnded) || !errors.As(err, &nu) || nu.Lease.SettledAt == "" {
		t.Fatalf("the refused upload: %v, want a *NotUploadedError (ErrEnded) with the settled lease", err)
	}
	var got []int64
	for _, r := range nu.Records {
		if r.Cancel || r.FY != "2026-27" || r.Number != "T07/26-27/"+pad5(int(r.Serial)) {
			t.Fatalf("not uploaded: %+v", r)
		}
		got = append(got, r.Serial)
	}
	if len(got) != int(to-from+1) || got[0] != from || got[len(got)-1] != to {
		t.Fatalf("not uploaded: %v, want %d..%d", got, from, to)
	}
}

// TestSyncUnderARateLimit: under serve --rate-limit 4 an upload may carry
// at most 4 invoices (429 over_rate_limit, never retried, for more); the
// till uploads 11 invoices and a cancellation in smaller batches and ends
// its lease.
func TestSyncUnderARateLimit(t *testing.T) {
	t.Parallel()
	start := time.Now()
	e := setupRate(t, func() time.Time { return serverNow.Add(time.Since(start)) }, 4)
	ctx := t.Context()
	clk := &clock{time.Date(2026, 11, 29, 18, 30, 0, 0, gst.IST)}
	term := e.terminal(t, "till-7", clk)
	for range 11 {
		if _, err := term.Issue(sale(0)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := term.Cancel("7", "returned"); err != nil {
		t.Fatal(err)
	}
	n, err := term.Sync(ctx, e.all)
	if err != nil || n != 12 {
		t.Fatalf("Sync under --rate-limit 4: %d stored, %v", n, err)
	}
	if l, err := term.End(ctx, e.all); err != nil || l.EndSerial != 11 {
		t.Fatalf("End: %+v, %v", l, err)
	}
	wantExactly(t, e.serials(t, 2026), 11)
	e.verify(t)
}

// TestUnknownLeaseStopsTheTill: the server does not know the till's lease
// (404 lease_not_found to the upload and to the read: a journal of another
// server, a database restored from before the lease). Nothing lets the
// till conclude that its lease holds, so it numbers nothing, also after a
// restart.
func TestUnknownLeaseStopsTheTill(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	clk := &clock{time.Date(2026, 11, 29, 18, 30, 0, 0, gst.IST)}
	l, err := e.all.Lease(ctx, "T07", "till-7")
	if err != nil {
		t.Fatal(err)
	}
	l.LeaseID = "ls_unknowntounknowntounknowntoun"
	path := filepath.Join(e.dir, "till-7.journal")
	term, err := offline.Create(path, l, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { term.Close() }()
	if _, err := term.Issue(sale(0)); err != nil {
		t.Fatal(err)
	}
	_, err = term.Sync(ctx, e.all)
	var ce *client.Error
	if !errors.Is(err, offline.ErrLeaseInDoubt) || !errors.As(err, &ce) || ce.Code != client.CodeLeaseNotFound {
		t.Fatalf("Sync of an unknown lease: %v, want ErrLeaseInDoubt and 404 lease_not_found", err)
	}
	for i := range 2 {
		if r, err := term.Issue(sale(0)); !errors.Is(err, offline.ErrLeaseInDoubt) {
			t.Fatalf("Issue %d with the lease unknown to the server: %+v, %v; want ErrLeaseInDoubt", i, r.Number, err)
		}
		term.Close()
		if term, err = offline.Open(path, clk.now); err != nil {
			t.Fatal(err)
		}
	}
}
