package offline_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/reports"
)

var (
	lifecycleRuns = flag.Int("runs", 200, "runs of TestLeaseLifecycleNeverNumbersTwice")
	lifecycleSeed = flag.Uint64("seed", 0, "TestLeaseLifecycleNeverNumbersTwice: run only the run of this seed (printed on failure)")
)

// lifecycleStats counts what the runs exercised, so that a change that
// stops a run from reaching a case shows.
type lifecycleStats struct {
	overlap   int // steps with both tills holding a lease
	locks     int // months locked
	lateInto  int // till invoices stored in a month after its lock
	reprinted int // sales journaled, a crash before the print, rung up again
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

// randomDrops is a transport that loses the answer of a request (after the
// server did it) with probability p, drawn from a seeded source.
type randomDrops struct {
	mu  sync.Mutex
	rng *rand.Rand
	p   float64
}

func (d *randomDrops) drop(*http.Request) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rng.Float64() < d.p
}

// TestLeaseLifecycleNeverNumbersTwice: per run (a seed, printed on
// failure; -runs sets how many), one series of one seller goes through a
// random life: online issues, a lease to a till whose clock is skewed by
// hours, sales, cancels, uploads, the device's end, a crash and restart,
// a lost device ended by force and settled year by year; the server's
// clock moves on, across IST midnight of 31 March in some runs; answers
// are dropped at random on every route after the server acted. After each
// run: no number was printed twice (by the till or online); after all
// runs invoiced verify finds no duplicate serial or number and no date
// going back, and gaps only in series whose lost device's serials were
// declared spent.
//
// Each run has two tills live at once (a series each) and online issuers
// in both series; the accountant may lock the month before the server's
// (runs across IST midnight of 30 June lock June while tills still print
// in it), and a sale may be journaled and the till crash before printing
// it: rung up again with the same key it gets the same number. Checked
// too: no invoice of a locked month stored or cancelled after its lock,
// except a till's late upload of what it issued under its lease
// (docs/offline.md, "Not done").
func TestLeaseLifecycleNeverNumbersTwice(t *testing.T) {
	t.Parallel()
	srv := &lockedClock{t: time.Date(2026, 11, 29, 10, 0, 0, 0, gst.IST)}
	e := setupAt(t, srv.now)
	base := uint64(time.Now().UnixNano())
	start := time.Now()
	settled := map[string]bool{} // series whose lost device's serials were declared
	runs := *lifecycleRuns
	if *lifecycleSeed != 0 {
		base, runs = *lifecycleSeed, 1
	}
	var st lifecycleStats
	for run := range runs {
		seed := base + uint64(run)
		if !lifecycleRun(t, e, srv, run, seed, settled, &st) {
			t.Fatalf("run %d failed: rerun it with -args -seed %d", run, seed)
		}
	}
	rep, err := reports.Verify(t.Context(), e.pool, e.seller, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Chains {
		if len(c.DuplicateSerials)+len(c.DuplicateNumbers)+len(c.DateRegressions) > 0 || (len(c.Gaps) > 0 && !settled[c.Series]) {
			t.Errorf("verify %s %s: gaps %v, duplicate serials %v, numbers %v, dates going back %v", c.Series, c.FY, c.Gaps, c.DuplicateSerials, c.DuplicateNumbers, c.DateRegressions)
		}
		for _, f := range c.Findings {
			// Declared serials are spent: a gap, or a counter ahead of
			// the last invoice when none came after them.
			if declared := f.Kind == reports.SerialGap || f.Kind == reports.CounterAhead; !declared || !settled[c.Series] {
				t.Errorf("verify %s %s: %s", c.Series, c.FY, f.Message)
			}
		}
	}
	t.Logf("%d runs in %s: %+v", runs, time.Since(start).Round(time.Millisecond), st)
	// Over 200 runs each case is reached many times (about 100 locks,
	// 50 reprints, 300 steps with two tills): none at all over 100 runs
	// means a run no longer gets there.
	if runs >= 100 && (st.overlap == 0 || st.locks == 0 || st.reprinted == 0) {
		t.Errorf("the runs never reached a case: %+v", st)
	}
}

// till is one terminal's lane of a run: its series (one per terminal),
// the terminal while it holds a lease, its clock's skew, and its printed
// receipts per year (the paper trail an accountant reads).
type till struct {
	code        string
	term        *offline.Terminal
	path        string
	skew        time.Duration
	lastPrinted map[string]int64
}

// monthLock is a month locked during a run, and what each of the run's
// series held in it then: number → cancelled.
type monthLock struct {
	month time.Time // first day
	held  map[string]bool
}

// lifecycleRun runs one random life of series A<run> and B<run>, two
// tills live at once and online issuers, and reports whether every check
// held (failures are logged on t).
func lifecycleRun(t *testing.T, e *env, srv *lockedClock, run int, seed uint64, settled map[string]bool, st *lifecycleStats) bool {
	t.Helper()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(seed, 0x1ead))
	kind := rng.IntN(3)
	switch kind {
	case 0: // across IST midnight of 31 March
		srv.set(time.Date(2027, 3, 31, 23, 40, 0, 0, gst.IST))
	case 1: // across IST midnight of 30 June, when June may be locked
		srv.set(time.Date(2026, 6, 30, 23, 40, 0, 0, gst.IST))
	default:
		srv.set(time.Date(2026, 6, 10, 11, 0, 0, 0, gst.IST))
	}
	// A<run> and B<run>, the run in base 36: numbers stay within 16
	// characters.
	id := strings.ToUpper(strconv.FormatInt(int64(run), 36))
	tills := []*till{{code: "A" + id}, {code: "B" + id}}
	for _, ln := range tills {
		testfactory.Series(t, e.pool, e.seller, &testfactory.SeriesOpts{Code: ln.code, Format: ln.code + "/{FY}/{SEQ:4}"})
		ln.lastPrinted = map[string]int64{}
	}
	drops := &randomDrops{rng: rand.New(rand.NewPCG(seed, 0xd20b)), p: 0.2}
	cl := client.New(e.url, e.key, client.WithBackoff(time.Millisecond, 5*time.Millisecond),
		client.WithHTTPClient(&http.Client{Transport: &dropAnswers{base: http.DefaultTransport, drop: drops.drop}}))

	ok := true
	fail := func(format string, args ...any) {
		t.Errorf("seed %d: "+format, append([]any{seed}, args...)...)
		ok = false
	}
	// With -seed the run logs its steps.
	trace := func(format string, args ...any) {
		if *lifecycleSeed != 0 {
			t.Logf("%s "+format, append([]any{srv.now().In(gst.IST).Format("01-02 15:04")}, args...)...)
		}
	}
	printed := map[string]string{}
	record := func(number, who string) {
		trace("printed %s (%s)", number, who)
		if first, dup := printed[number]; dup {
			fail("%s printed by %s and again by %s", number, first, who)
		}
		printed[number] = who
	}
	var locks []monthLock
	opCtx := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 3*time.Second) }
	// sold handles a sale's outcome on ln; it returns the receipt when
	// the sale was numbered.
	sold := func(ln *till, r offline.Receipt, err error) bool {
		switch {
		case err == nil:
			return true
		case errors.Is(err, offline.ErrClockBehind):
			ln.skew = 0 // the shop sets the clock
		case errors.Is(err, offline.ErrEndPending), errors.Is(err, offline.ErrEnded), errors.Is(err, offline.ErrLeaseInDoubt):
		default:
			fail("sell in %s: %v", ln.code, err)
		}
		return false
	}
	reopen := func(ln *till) bool {
		ln.term.Close()
		var err error
		if ln.term, err = offline.Open(ln.path, func() time.Time { return srv.now().Add(ln.skew) }); err != nil {
			fail("reopen %s: %v", ln.code, err)
			return false
		}
		return true
	}

	for step := range 12 + rng.IntN(16) {
		srv.set(srv.now().Add(time.Duration(rng.IntN(15)) * time.Minute))
		ln := tills[rng.IntN(len(tills))]
		if tills[0].term != nil && tills[1].term != nil {
			st.overlap++
		}
		op := rng.IntN(12)
		trace("step %d: %s op %d", step, ln.code, op)
		switch {
		case op == 0 && ln.term == nil: // lease
			c, cancel := opCtx()
			l, err := cl.Lease(c, ln.code, "till")
			cancel()
			if err != nil {
				continue // a lost answer: the lease may be held; a forced end frees it below
			}
			ln.path = filepath.Join(e.dir, fmt.Sprintf("%s-%d.journal", ln.code, step))
			ln.skew = time.Duration(rng.IntN(6*60)-3*60) * time.Minute
			var err2 error
			if ln.term, err2 = offline.Create(ln.path, l, func() time.Time { return srv.now().Add(ln.skew) }); err2 != nil {
				fail("create: %v", err2)
				return false
			}
		case op <= 3 && ln.term != nil: // sell
			r, err := ln.term.IssueKeyed(fmt.Sprintf("%s-%d", ln.code, step), sale(0))
			if sold(ln, r, err) {
				record(r.Number, "the till")
				ln.lastPrinted[r.FY] = max(ln.lastPrinted[r.FY], r.Serial)
			}
		case op == 4 && ln.term != nil && rng.IntN(2) == 0: // cancel the last sale
			if n := ln.term.LastSerial(); n > 0 {
				if _, err := ln.term.Cancel(fmt.Sprint(n), "returned"); err != nil && !errors.Is(err, offline.ErrAlreadyCancelled) &&
					!errors.Is(err, offline.ErrEndPending) && !errors.Is(err, offline.ErrEnded) && !errors.Is(err, offline.ErrUnknownInvoice) &&
					!errors.Is(err, offline.ErrLeaseInDoubt) {
					fail("cancel: %v", err)
				}
			}
		case op == 5 && ln.term != nil: // sync
			c, cancel := opCtx()
			_, _ = ln.term.Sync(c, cl)
			cancel()
		case op == 6 && ln.term != nil: // end
			c, cancel := opCtx()
			_, _ = ln.term.End(c, cl)
			cancel()
		case op == 7 && ln.term != nil: // crash and restart
			if !reopen(ln) {
				return false
			}
		case op == 8 && ln.term != nil: // a sale journaled, then a crash before the printer
			key := fmt.Sprintf("%s-%d-crash", ln.code, step)
			r, err := ln.term.IssueKeyed(key, sale(1))
			if !sold(ln, r, err) {
				continue
			}
			if !reopen(ln) {
				return false
			}
			// Rung up again with the same key: the same number, never a
			// second one.
			again, err := ln.term.IssueKeyed(key, sale(1))
			if err != nil || !again.Replayed || again.Number != r.Number {
				fail("%s rung up again after a crash before printing: %s (replayed %v), %v; want %s again", key, again.Number, again.Replayed, err, r.Number)
				return false
			}
			record(again.Number, "the till (printed after a crash)")
			st.reprinted++
			ln.lastPrinted[again.FY] = max(ln.lastPrinted[again.FY], again.Serial)
		case op == 9 && rng.IntN(3) == 0: // the device is lost: forced end, settlement
			if !forceAndSettle(ctx, e, ln.code, srv, ln.lastPrinted, fail) {
				return false
			}
			settled[ln.code] = true
			if ln.term != nil {
				ln.term.Close()
				ln.term = nil
			}
			ln.lastPrinted = map[string]int64{}
		case op == 10 && kind != 0 && len(locks) == 0: // the accountant locks the month before the server's
			now := srv.now().In(gst.IST)
			m := time.Date(now.Year(), now.Month()-1, 1, 0, 0, 0, 0, time.UTC)
			ml := monthLock{month: m, held: map[string]bool{}}
			for _, x := range tills {
				if err := inMonth(ctx, e, x.code, m, ml.held); err != nil {
					fail("read %s: %v", x.code, err)
					return false
				}
			}
			if _, err := e.all.LockPeriod(ctx, m.Format("012006")); err != nil {
				fail("lock %s: %v", m.Format("Jan 2006"), err)
				return false
			}
			locks = append(locks, ml)
			st.locks++
		default: // online
			c, cancel := opCtx()
			inv, err := cl.IssueInvoice(c, ln.code, sale(0))
			cancel()
			var ce *client.Error
			switch {
			case err == nil:
				record(inv.Number, "online")
			case errors.As(err, &ce) && ce.Code == client.CodeSeriesLeased:
			case client.IsOutcomeUnknown(err):
			default:
				fail("online: %v", err)
			}
		}
		if !ok {
			return false
		}
	}
	// Wind down: each till (if any) uploads and ends, else a held lease is
	// ended by force and settled; so is a till whose upload is refused
	// for a cancel of a month locked meanwhile (its correction is a
	// credit note; docs/offline.md).
	for _, ln := range tills {
		if ln.term != nil {
			var err error
			var ce *client.Error
			for range 20 {
				c, cancel := opCtx()
				_, err = ln.term.End(c, cl)
				cancel()
				if err == nil || errors.Is(err, offline.ErrEnded) || (errors.As(err, &ce) && ce.Code == client.CodePeriodLocked) {
					break
				}
			}
			ln.term.Close()
			switch {
			case err == nil, errors.Is(err, offline.ErrEnded):
				continue
			case errors.As(err, &ce) && ce.Code == client.CodePeriodLocked && len(locks) > 0:
			default:
				fail("the till of %s never ended: %v", ln.code, err)
				return false
			}
		}
		if !forceAndSettle(ctx, e, ln.code, srv, ln.lastPrinted, fail) {
			return false
		}
		settled[ln.code] = true
	}
	// Nobody holds the series now: online issues again, never a number
	// printed before.
	for _, ln := range tills {
		for range 2 {
			inv, err := e.all.IssueInvoice(ctx, ln.code, sale(0))
			if err != nil {
				fail("online in %s after the lease: %v", ln.code, err)
				return false
			}
			record(inv.Number, "online after the lease")
		}
	}
	// No invoice of a locked month was stored or cancelled after its
	// lock, except a till's late upload of invoices it issued under its
	// lease (docs/offline.md, "Not done"); then the month is unlocked for
	// the next run.
	for _, ml := range locks {
		now := map[string]bool{}
		for _, ln := range tills {
			if err := inMonth(ctx, e, ln.code, ml.month, now); err != nil {
				fail("read %s: %v", ln.code, err)
				return false
			}
		}
		for number, cancelled := range now {
			was, before := ml.held[number]
			switch {
			case !before && !strings.HasPrefix(printed[number], "the till"):
				fail("%s, dated in %s, stored after the month was locked by %q", number, ml.month.Format("Jan 2006"), printed[number])
			case cancelled && !(before && was):
				fail("%s, dated in %s, cancelled after the month was locked", number, ml.month.Format("Jan 2006"))
			case !before:
				st.lateInto++
			}
		}
		if err := invoice.UnlockPeriod(ctx, e.pool, e.seller, document.MonthOf(ml.month), "test", "the next run", srv.now()); err != nil {
			fail("unlock: %v", err)
			return false
		}
	}
	return ok
}

// inMonth adds to into the invoices of series code dated in month m:
// number → cancelled.
func inMonth(ctx context.Context, e *env, code string, m time.Time, into map[string]bool) error {
	rows, err := e.pool.Query(ctx, `SELECT i.number, i.status = 'cancelled' FROM invoices i JOIN series s ON s.id = i.series_id
		WHERE s.code = $1 AND i.invoice_date >= $2 AND i.invoice_date < $3`, code, m, m.AddDate(0, 1, 0))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		var c bool
		if err := rows.Scan(&n, &c); err != nil {
			return err
		}
		into[n] = c
	}
	return rows.Err()
}

// forceAndSettle ends the lease holding code by force, if any, and settles
// it declaring, for each year from the lease's start to now's, the later
// of the last serial stored and the last one the till printed.
func forceAndSettle(ctx context.Context, e *env, code string, srv *lockedClock, lastPrinted map[string]int64, fail func(string, ...any)) bool {
	l, err := e.all.GetLease(ctx, code, "")
	var ce *client.Error
	if errors.As(err, &ce) && ce.Code == "lease_not_found" {
		return true
	}
	if err != nil {
		fail("read the holder: %v", err)
		return false
	}
	if l.EndedAt == "" {
		if l, err = e.all.EndLease(ctx, code, "", client.EndLeaseRequest{Force: true, Reason: "lost"}); err != nil {
			fail("force: %v", err)
			return false
		}
	}
	// The forced end recorded every year from the lease's start.
	var declared []client.YearSerial
	var start gst.FY
	years := map[string]int64{}
	for _, y := range l.EndYears {
		years[y.FY] = y.Through
		if fy, err := gst.ParseFY(y.FY); err == nil && (start == 0 || fy < start) {
			start = fy
		}
	}
	// To the year of the server's tomorrow (what the forced end covers),
	// or a later one the till printed in with its clock ahead.
	last := max(start, gst.FYAt(srv.now().Add(24*time.Hour)))
	for y := range lastPrinted {
		if fy, err := gst.ParseFY(y); err == nil {
			last = max(last, fy)
		}
	}
	for y := start; y <= last; y++ {
		n := max(years[y.String()], lastPrinted[y.String()], stored(ctx, e, code, y))
		declared = append(declared, client.YearSerial{FY: y.String(), Through: n})
	}
	if _, err := e.all.EndLease(ctx, code, "", client.EndLeaseRequest{Declared: declared, Reason: "paper receipts"}); err != nil {
		fail("settle %+v: %v", declared, err)
		return false
	}
	return true
}

// stored returns the last serial of code's counter in fy (0: none).
func stored(ctx context.Context, e *env, code string, fy gst.FY) int64 {
	var n int64
	_ = e.pool.QueryRow(ctx, `SELECT coalesce(max(c.last_serial), 0) FROM series_counters c JOIN series s ON s.id = c.series_id
		WHERE s.code = $1 AND c.fy = $2`, code, int(fy)).Scan(&n)
	return n
}
