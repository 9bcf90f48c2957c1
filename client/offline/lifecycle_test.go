package offline_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
)

var lifecycleRuns = flag.Int("runs", 200, "runs of TestLeaseLifecycleNeverNumbersTwice")

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
// declared spent. Period locks are not taken here (their refusals have a
// test of their own, TestUploadsOutsideTheLeaseStoreNothing).
func TestLeaseLifecycleNeverNumbersTwice(t *testing.T) {
	t.Parallel()
	srv := &lockedClock{t: time.Date(2026, 11, 29, 10, 0, 0, 0, series.IST)}
	e := setupAt(t, srv.now)
	base := uint64(time.Now().UnixNano())
	start := time.Now()
	settled := map[string]bool{} // series whose lost device's serials were declared
	for run := range *lifecycleRuns {
		seed := base + uint64(run)
		if !lifecycleRun(t, e, srv, run, seed, settled) {
			t.Fatalf("run %d failed: rerun with seed %d", run, seed)
		}
	}
	rep, err := reports.Verify(context.Background(), e.pool, e.seller, "", 0)
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
	t.Logf("%d runs in %s", *lifecycleRuns, time.Since(start).Round(time.Millisecond))
}

// lifecycleRun runs one random life of series R<run> and reports whether
// every check held (failures are logged on t).
func lifecycleRun(t *testing.T, e *env, srv *lockedClock, run int, seed uint64, settled map[string]bool) bool {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 0x1ead))
	code := fmt.Sprintf("R%d", run)
	testfactory.Series(t, e.pool, e.seller, &testfactory.SeriesOpts{Code: code, Format: code + "/{FY}/{SEQ:5}"})
	if rng.IntN(3) == 0 { // across IST midnight of 31 March
		srv.set(time.Date(2027, 3, 31, 23, 40, 0, 0, series.IST))
	} else {
		srv.set(time.Date(2026, 6, 10, 11, 0, 0, 0, series.IST))
	}
	drops := &randomDrops{rng: rand.New(rand.NewPCG(seed, 0xd20b)), p: 0.2}
	cl := client.New(e.url, e.key, client.WithBackoff(time.Millisecond, 5*time.Millisecond),
		client.WithHTTPClient(&http.Client{Transport: &dropAnswers{base: http.DefaultTransport, drop: drops.drop}}))

	ok := true
	fail := func(format string, args ...any) {
		t.Errorf("seed %d: "+format, append([]any{seed}, args...)...)
		ok = false
	}
	printed := map[string]string{}
	record := func(number, who string) {
		if first, dup := printed[number]; dup {
			fail("%s printed by %s and again by %s", number, first, who)
		}
		printed[number] = who
	}
	// The till's receipts per year: the paper trail an accountant reads.
	lastPrinted := map[string]int64{}
	var term *offline.Terminal
	var path string
	var skew time.Duration
	devClock := func() time.Time { return srv.now().Add(skew) }
	opCtx := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 3*time.Second) }

	for step := range 6 + rng.IntN(8) {
		srv.set(srv.now().Add(time.Duration(rng.IntN(15)) * time.Minute))
		switch op := rng.IntN(10); {
		case op == 0 && term == nil: // lease
			c, cancel := opCtx()
			l, err := cl.Lease(c, code, "till")
			cancel()
			if err != nil {
				continue // a lost answer: the lease may be held; a forced end frees it below
			}
			path = filepath.Join(e.dir, fmt.Sprintf("%s-%d.journal", code, step))
			skew = time.Duration(rng.IntN(6*60)-3*60) * time.Minute
			if term, err = offline.Create(path, l, devClock); err != nil {
				fail("create: %v", err)
				return false
			}
		case op <= 3 && term != nil: // sell
			r, err := term.IssueKeyed(fmt.Sprintf("%s-%d", code, step), sale(0))
			switch {
			case err == nil:
				record(r.Number, "the till")
				lastPrinted[r.FY] = max(lastPrinted[r.FY], r.Serial)
			case errors.Is(err, offline.ErrClockBehind):
				skew = 0 // the shop sets the clock
			case errors.Is(err, offline.ErrEndPending), errors.Is(err, offline.ErrEnded):
			default:
				fail("sell: %v", err)
			}
		case op == 4 && term != nil && rng.IntN(2) == 0: // cancel the last sale
			if n := term.LastSerial(); n > 0 {
				if _, err := term.Cancel(fmt.Sprint(n), "returned"); err != nil && !errors.Is(err, offline.ErrAlreadyCancelled) &&
					!errors.Is(err, offline.ErrEndPending) && !errors.Is(err, offline.ErrEnded) && !errors.Is(err, offline.ErrUnknownInvoice) {
					fail("cancel: %v", err)
				}
			}
		case op == 5 && term != nil: // sync
			c, cancel := opCtx()
			_, _ = term.Sync(c, cl)
			cancel()
		case op == 6 && term != nil: // end
			c, cancel := opCtx()
			_, _ = term.End(c, cl)
			cancel()
		case op == 7 && term != nil: // crash and restart
			term.Close()
			var err error
			if term, err = offline.Open(path, devClock); err != nil {
				fail("reopen: %v", err)
				return false
			}
		case op == 8 && rng.IntN(3) == 0: // the device is lost: forced end, settlement
			if !forceAndSettle(ctx, e, code, srv, lastPrinted, fail) {
				return false
			}
			settled[code] = true
			if term != nil {
				term.Close()
				term = nil
			}
			lastPrinted = map[string]int64{}
		default: // online
			c, cancel := opCtx()
			inv, err := cl.IssueInvoice(c, code, sale(0))
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
	// Wind down: the till (if any) uploads and ends, else a held lease is
	// ended by force and settled.
	if term != nil {
		var err error
		for range 20 {
			c, cancel := opCtx()
			_, err = term.End(c, cl)
			cancel()
			if err == nil || errors.Is(err, offline.ErrEnded) {
				break
			}
		}
		term.Close()
		if err != nil && !errors.Is(err, offline.ErrEnded) {
			fail("the till never ended: %v", err)
			return false
		}
	} else {
		if !forceAndSettle(ctx, e, code, srv, lastPrinted, fail) {
			return false
		}
		settled[code] = true
	}
	// Nobody holds the series now: online issues again, never a number
	// printed before.
	for range 2 {
		inv, err := e.all.IssueInvoice(ctx, code, sale(0))
		if err != nil {
			fail("online after the lease: %v", err)
			return false
		}
		record(inv.Number, "online after the lease")
	}
	return ok
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
	var start series.FY
	years := map[string]int64{}
	for _, y := range l.EndYears {
		years[y.FY] = y.Through
		if fy, err := series.ParseFY(y.FY); err == nil && (start == 0 || fy < start) {
			start = fy
		}
	}
	for y := start; y <= max(start, series.FYAt(srv.now())); y++ {
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
func stored(ctx context.Context, e *env, code string, fy series.FY) int64 {
	var n int64
	_ = e.pool.QueryRow(ctx, `SELECT coalesce(max(c.last_serial), 0) FROM series_counters c JOIN series s ON s.id = c.series_id
		WHERE s.code = $1 AND c.fy = $2`, code, int(fy)).Scan(&n)
	return n
}
