package offline_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
)

// dropAnswers is a transport that carries a request to the server and
// then loses the answer, for the requests drop says (the server did the
// work; the client never hears of it).
type dropAnswers struct {
	base http.RoundTripper
	drop func(*http.Request) bool
}

func (d *dropAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := d.base.RoundTrip(r)
	if err != nil || !d.drop(r) {
		return res, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return nil, errors.New("connection reset by peer (answer dropped)")
}

// clientDropping is a client of e whose transport loses the answers drop
// says.
func (e *env) clientDropping(drop func(*http.Request) bool) *client.Client {
	return client.New(e.url, e.key, client.WithBackoff(5*time.Millisecond, 50*time.Millisecond),
		client.WithHTTPClient(&http.Client{Transport: &dropAnswers{base: http.DefaultTransport, drop: drop}}))
}

// printed is the numbers handed out, by anyone, with who printed them.
type printed struct {
	mu sync.Mutex
	by map[string]string
}

func (p *printed) add(t *testing.T, number, who string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.by == nil {
		p.by = map[string]string{}
	}
	if first, ok := p.by[number]; ok {
		t.Fatalf("%s printed by %s and again by %s", number, first, who)
	}
	p.by[number] = who
}

// TestLostEndAnswerNeverNumbersTwice: the device's DELETE of its lease is
// committed by the server and its answer lost (once, then always until
// the device gives up, then a crash before the journal records the end).
// Whatever the device concludes, no number is printed both by the till
// and online.
func TestLostEndAnswerNeverNumbersTwice(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		drops int64 // answers to DELETE lost before one arrives
		crash bool  // the device restarts after End fails
	}{{"one lost answer", 1, false}, {"every answer lost, then a crash", 1 << 30, true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			ctx := t.Context()
			clk := &clock{time.Date(2026, 11, 29, 18, 30, 0, 0, gst.IST)}
			l, err := e.all.Lease(ctx, "T07", "till-7")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(e.dir, "till-7.journal")
			term, err := offline.Create(path, l, clk.now)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { term.Close() }()
			var p printed
			for range 3 {
				r, err := term.Issue(sale(0))
				if err != nil {
					t.Fatal(err)
				}
				p.add(t, r.Number, "the till")
			}
			var dropped atomic.Int64
			dev := e.clientDropping(func(r *http.Request) bool {
				return r.Method == http.MethodDelete && dropped.Add(1) <= c.drops
			})
			endCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, endErr := term.End(endCtx, dev)
			cancel()
			t.Logf("End: %v", endErr)
			if c.crash {
				term.Close()
				if term, err = offline.Open(path, clk.now); err != nil {
					t.Fatal(err)
				}
			}
			r, err := term.Issue(sale(0))
			if err == nil {
				p.add(t, r.Number, "the till after End")
			}
			// The device concludes only what it learnt: a lost answer is
			// learnt again (the end is idempotent); with no answer at all
			// the end stays pending across the crash.
			switch {
			case !c.crash && (endErr != nil || !errors.Is(err, offline.ErrEnded)):
				t.Fatalf("after one lost answer: End %v, Issue %v; want the end learnt and ErrEnded", endErr, err)
			case c.crash && !errors.Is(err, offline.ErrEndPending):
				t.Fatalf("after the crash: Issue %v, want ErrEndPending", err)
			}
			inv, err := e.all.IssueInvoice(ctx, "T07", sale(0))
			if err != nil {
				t.Fatalf("online after the device's end: %v", err)
			}
			p.add(t, inv.Number, "online")
			if c.crash {
				// Asked again, the server answers the end it committed.
				if l, err := term.End(ctx, e.all); err != nil || l.EndSerial != 3 {
					t.Fatalf("End again: %+v, %v", l, err)
				}
				if _, err := term.Issue(sale(0)); !errors.Is(err, offline.ErrEnded) {
					t.Fatalf("Issue after the end was learnt: %v", err)
				}
			}
		})
	}
}

// TestDeviceLostAfterTheYearTurnsNeverNumbersTwice: a till leased in March
// numbers the new year's first serials in April and is lost before
// uploading them. After the forced end and its settlement, online
// issuance never hands out a number the till printed.
func TestDeviceLostAfterTheYearTurnsNeverNumbersTwice(t *testing.T) {
	t.Parallel()
	srv := &clock{time.Date(2027, 3, 30, 12, 0, 0, 0, gst.IST)}
	e := setupAt(t, srv.now)
	ctx := t.Context()
	var p printed
	for range 3 {
		inv, err := e.all.IssueInvoice(ctx, "T07", sale(0))
		if err != nil {
			t.Fatal(err)
		}
		p.add(t, inv.Number, "online before the lease")
	}
	clk := &clock{time.Date(2027, 3, 30, 13, 0, 0, 0, gst.IST)}
	term := e.terminal(t, "till-7", clk)
	clk.t = time.Date(2027, 4, 2, 10, 0, 0, 0, gst.IST)
	for range 2 {
		r, err := term.Issue(sale(0))
		if err != nil {
			t.Fatal(err)
		}
		p.add(t, r.Number, "the lost till")
	}
	srv.t = time.Date(2027, 4, 5, 10, 0, 0, 0, gst.IST)
	if _, err := e.all.EndLease(ctx, "T07", "", client.EndLeaseRequest{Force: true, Reason: "till 7 stolen"}); err != nil {
		t.Fatal(err)
	}
	// Both years the lease could have touched are findings, and Table 13
	// warns of both.
	for _, y := range []struct {
		fy     int
		serial int64
	}{{2026, 4}, {2027, 1}} {
		if sum := e.auditYear(t, y.fy); sum.Intact || !hasFinding(sum, reports.DeviceNotUploaded, y.serial) {
			t.Fatalf("audit of %d after the forced end: %+v", y.fy, sum.Findings)
		}
	}
	rep, err := reports.DocIssue(ctx, e.pool, e.seller, mustPeriod(t, "042027"))
	if err != nil || len(rep.Warnings) != 2 {
		t.Fatalf("Table 13 warnings: %q, %v", rep.Warnings, err)
	}
	through := int64(3) // the paper trail of 2026-27: nothing after the online three
	_, err = e.all.EndLease(ctx, "T07", "", client.EndLeaseRequest{DeclaredThrough: &through, Reason: "no paper receipts"})
	wantCode(t, err, http.StatusUnprocessableEntity, client.CodeLeaseYearsUndeclared)
	_, err = e.all.EndLease(ctx, "T07", "", client.EndLeaseRequest{Declared: []client.YearSerial{{FY: "2026-27", Through: 3}}, Reason: "no paper receipts"})
	wantCode(t, err, http.StatusUnprocessableEntity, client.CodeLeaseYearsUndeclared)
	// Online issuance stays closed in every year until the settlement.
	_, err = e.all.IssueInvoice(ctx, "T07", sale(0))
	wantCode(t, err, http.StatusConflict, client.CodeSeriesLeased)
	l, err := e.all.EndLease(ctx, "T07", "", client.EndLeaseRequest{Declared: []client.YearSerial{{FY: "2026-27", Through: 3}, {FY: "2027-28", Through: 2}},
		Reason: "paper receipts: 27-28 up to 2"})
	if err != nil || len(l.Declared) != 2 {
		t.Fatalf("settle both years: %+v, %v", l, err)
	}
	for i := range 3 {
		inv, err := e.all.IssueInvoice(ctx, "T07", sale(0))
		if err != nil {
			t.Fatal(err)
		}
		p.add(t, inv.Number, "online after settling")
		if want := "T07/27-28/" + pad5(3+i); inv.Number != want {
			t.Fatalf("online after settling: %s, want %s", inv.Number, want)
		}
	}
	for _, fy := range []int{2026, 2027} {
		if sum := e.auditYear(t, fy); hasFinding(sum, reports.DeviceNotUploaded, 0) || len(findings(sum, reports.DeviceNotUploaded)) != 0 {
			t.Fatalf("audit of %d after settling: %+v", fy, sum.Findings)
		}
	}
}

// findings returns sum's findings of kind.
func findings(sum reports.Summary, kind reports.FindingKind) []reports.Finding {
	var out []reports.Finding
	for _, f := range sum.Findings {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

// auditYear is audit for the year starting in fy.
func (e *env) auditYear(t *testing.T, fy int) reports.Summary {
	t.Helper()
	s, err := series.Get(t.Context(), e.pool, e.seller.ID, "T07")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := reports.AuditSummary(t.Context(), e.pool, e.seller, s, gst.FY(fy))
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestLeaseEarlyInTheYearWithAClockBehind: the series is leased on 1
// April after invoices of the old year were issued online; the till's
// clock says 31 March. The till never prints a number of the old year (it
// refuses, or numbers the new one).
func TestLeaseEarlyInTheYearWithAClockBehind(t *testing.T) {
	t.Parallel()
	srv := &clock{time.Date(2027, 3, 31, 15, 0, 0, 0, gst.IST)}
	e := setupAt(t, srv.now)
	ctx := t.Context()
	var p printed
	for range 3 {
		inv, err := e.all.IssueInvoice(ctx, "T07", sale(0))
		if err != nil {
			t.Fatal(err)
		}
		p.add(t, inv.Number, "online")
	}
	srv.t = time.Date(2027, 4, 1, 10, 0, 0, 0, gst.IST)
	clk := &clock{time.Date(2027, 3, 31, 20, 0, 0, 0, gst.IST)}
	term := e.terminal(t, "till-7", clk)
	r, err := term.Issue(sale(0))
	if err == nil {
		p.add(t, r.Number, "the till")
		t.Fatalf("the till printed %s (%s) with its clock a day behind the lease", r.Number, r.IssuedAt)
	}
	if !errors.Is(err, offline.ErrClockBehind) {
		t.Fatalf("Issue with the clock a day behind: %v, want ErrClockBehind", err)
	}
	// Hours behind on the lease's day: floored at the lease's time.
	clk.t = time.Date(2027, 4, 1, 0, 30, 0, 0, gst.IST)
	if r, err = term.Issue(sale(0)); err != nil {
		t.Fatal(err)
	}
	p.add(t, r.Number, "the till")
	if r.Number != "T07/27-28/00001" || !r.IssuedAt.Equal(srv.t) {
		t.Fatalf("the till printed %s at %s, want T07/27-28/00001 at the lease's time %s", r.Number, r.IssuedAt, srv.t)
	}
}
