package offline_test

import (
	"flag"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/reports"
)

var (
	lifecycleRuns = flag.Int("runs", 200, "runs of TestLeaseLifecycleNeverNumbersTwice")
	lifecycleSeed = flag.Uint64("seed", 0, "TestLeaseLifecycleNeverNumbersTwice: run only the run of this seed (printed on failure) and log its steps")
)

// lifecycleBodyMax is the body limit of the lifecycle's server (serve's
// MaxBodyBytes): two or three large sales make an upload too large, as
// 100 sales of 250 items do under the default 8 MiB.
const lifecycleBodyMax = 16 << 10

// lifecycleStats counts what the runs reached, so that a change that stops
// the runs from reaching a case shows (each must be reached over 100 runs).
type lifecycleStats struct {
	Overlap        int // steps with both tills holding a lease
	Locks          int // months locked
	LateInto       int // till invoices stored in a month after its lock
	Reprinted      int // sales journaled, a crash before the print, rung up again
	PendingRefused int // sales refused while an end was pending
	Held           int // requests held in flight and released later
	Down           int // links that went down (answers lost across calls)
	ForcedEnds     int // leases ended by force
	EndedAfterHeld int // tills whose End settled a lease ended by force
	Settled        int // settlements the accountant made
	Refused        int // settlements the server refused (wrong declarations)
	Under          int // settlements accepted below the paper trail
	Excused        int // numbers printed twice that the paper trail excuses
	Voided         int // cancels refused for a locked month, voided by the till
	BigSyncs       int // syncs with two or more large sales pending
	Damaged        int // journals damaged (and refused)
	Tampered       int // tampered uploads and end requests refused
	ClockBehind    int // sales refused with the till's clock a day behind
	YearNotLeased  int // sales refused in a year the lease does not reserve
	LaterYear      int // sales in a lease's later year that held serials when it was taken
	AskedAgain     int // lease answers lost, then answered again
	TurnedUp       int // lost devices that turned up
	DeclaredYears  int // series-years read intact with serials declared at a settlement
	StuckEnds      int // ends left pending by a held end and lost resumes, then forced
}

// reached returns the cases st never reached.
func (st lifecycleStats) unreached() []string {
	var out []string
	v := reflect.ValueOf(st)
	for i := range v.NumField() {
		if v.Field(i).Int() == 0 {
			out = append(out, v.Type().Field(i).Name)
		}
	}
	return out
}

// lockedClock is a server clock the test moves while the server reads it.
type lockedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *lockedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *lockedClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// TestLeaseLifecycleNeverNumbersTwice is the proof of docs/offline.md's
// invariants ("Invariants"): per run (a seed, printed on failure with the
// run's steps; -runs sets how many, -seed reruns one), two series of one
// seller, each with a till of its own and online issuers, go through a
// random life against the in-process server and a real PostgreSQL
// (lifecycleRun): leases (their answers lost at random and asked again),
// sales small and large, cancels, uploads, ends, crashes, reprints, journal
// damage, lost devices that may turn up, forced ends, settlements declared
// at random (wrong ones too), month locks, tampered uploads and end
// requests, till clocks from a day behind the lease to four days ahead,
// and a network that loses answers, holds requests in flight to deliver
// them steps later, and goes down across calls. The server's clock moves
// on, across IST midnight of 31 March (a third of the runs also a year
// on, past the lease's two years) or of 30 June (June locked while the
// tills print in it). After each step and each run the checks hold (see
// lifecycleRun); after all runs invoiced verify finds no duplicate serial
// or number, no date going back, and gaps only in series a settlement
// declared serials of.
func TestLeaseLifecycleNeverNumbersTwice(t *testing.T) {
	t.Parallel()
	srv := &lockedClock{t: time.Date(2026, 11, 29, 10, 0, 0, 0, gst.IST)}
	e := setupWith(t, api.Config{Now: srv.now, MaxBodyBytes: lifecycleBodyMax})
	base := uint64(time.Now().UnixNano())
	start := time.Now()
	runs := *lifecycleRuns
	if *lifecycleSeed != 0 {
		base, runs = *lifecycleSeed, 1
	}
	var st lifecycleStats
	tenants := []*env{e}
	for run := range runs {
		seed := base + uint64(run)
		if run > 0 && run%runsPerSeller == 0 {
			// Each run adds two series; a seller may have
			// series.MaxPerSeller.
			tenants = append(tenants, e.anotherSeller(t, len(tenants)))
		}
		r := newLifecycleRun(t, tenants[len(tenants)-1], srv, run, seed, &st)
		ok := r.play()
		if !ok || *lifecycleSeed != 0 {
			t.Logf("seed %d, %d steps:\n%s", seed, len(r.trace), strings.Join(r.trace, "\n"))
		}
		if !ok {
			t.Fatalf("run %d failed: rerun it with -args -seed %d", run, seed)
		}
	}
	// Every series-year is intact: a settlement's serials are declared in
	// the chain, never a gap (docs/offline.md).
	for _, te := range tenants {
		rep, err := reports.Verify(t.Context(), te.pool, te.seller, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rep.Chains {
			for _, f := range c.Findings {
				t.Errorf("verify %s %s %s: %s", te.seller.Name, c.Series, c.FY, f.Message)
			}
			if c.Omitted > 0 {
				t.Errorf("verify %s %s %s: %d further findings", te.seller.Name, c.Series, c.FY, c.Omitted)
			}
			if n := c.DeclaredCount(); n > 0 {
				st.DeclaredYears++
			}
		}
	}
	t.Logf("%d runs in %s: %+v", runs, time.Since(start).Round(time.Millisecond), st)
	if never := st.unreached(); runs >= 100 && len(never) > 0 {
		t.Errorf("over %d runs these cases were never reached: %s (%+v)", runs, strings.Join(never, ", "), st)
	}
}

// monthLock is a month locked during a run, and what each of the run's
// series held in it then: number → cancelled.
type monthLock struct {
	month time.Time // first day
	held  map[string]bool
}

// String names the lock's month.
func (m monthLock) String() string { return fmt.Sprint(m.month.Format("Jan 2006")) }
