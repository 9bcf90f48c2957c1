package offline_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
)

// lifecycleRun is one random life of two series, a till each, online
// issuers, a manager and an accountant. Its checks (each failing the run
// with what broke, the seed and the steps so far):
//
//   - no number is printed twice (by a till or online), except what a
//     wrong settlement excuses: serials the accountant declared below the
//     paper trail (the server cannot know the paper), and what a till
//     prints after the accountant settled its lease and before any answer
//     reached it (the settlement said the device was lost);
//   - a till's receipt is issued at its clock's time, floored at its last
//     record (and the lease's not_before), so dated by its clock unless
//     that is behind its last record; a clock on a date before the floor
//     is refused (ErrClockBehind), as is a year the lease does not reserve;
//   - no invoice is stored dated after the server's tomorrow, nor
//     cancelled (or stored, but by a till's late upload) in a month
//     after its lock;
//   - each tampered upload or end request is refused with its own code,
//     storing nothing, and a refused end request's report is recorded;
//   - a lease of a free series is taken (its answer lost, it is asked
//     again); a lease asked again with its key answers what it first did,
//     or lease_held;
//   - a forced end leaves an audit finding in every year the lease
//     reserves; a settlement is accepted exactly when it declares each
//     reserved year, no other, none below what the server knows;
//   - a till whose own End succeeded uploaded everything it journaled
//     (a cancellation refused for a locked month excepted);
//   - at the end every till still working ends its lease (the network
//     restored, the server's clock past the tills'), whatever happened.
type lifecycleRun struct {
	t       *testing.T
	e       *env
	srv     *lockedClock
	run     int
	seed    uint64
	rng     *rand.Rand
	kind    int
	ctx     context.Context
	st      *lifecycleStats
	lanes   []*lane
	mgr     *client.Client // the manager's: takes leases, answers lost at random
	online  *client.Client // online issuers': answers lost at random
	printed map[string]printing
	// released: numbers an accepted settlement declared below the paper
	// trail (the accountant's mistake, which the server cannot see).
	released map[string]bool
	settled  map[string]bool // series a settlement declared serials of
	// accountantSettled: leases the accountant settled (by lease id).
	accountantSettled map[string]bool
	locks             []monthLock
	trace             []string
	step              int
	ok                bool
}

// printing is who printed a number, and whether a duplicate of it is
// excused (lifecycleRun).
type printing struct {
	who     string
	excused bool
}

// Run kinds: where the server's clock starts.
const (
	acrossYearEnd = iota // 31 March, 23:40 IST
	acrossJune           // 30 June, 23:40 IST: June is locked while tills print in it
	ordinary             // 10 June: May may be locked
	pastTheLease         // 31 March 2027, then a year on: past a lease's two years
	runKinds
)

func newLifecycleRun(t *testing.T, e *env, srv *lockedClock, run int, seed uint64, st *lifecycleStats) *lifecycleRun {
	r := &lifecycleRun{t: t, e: e, srv: srv, run: run, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x1ead)), ctx: t.Context(), st: st,
		printed: map[string]printing{}, released: map[string]bool{}, settled: map[string]bool{}, accountantSettled: map[string]bool{}, ok: true}
	r.kind = r.rng.IntN(runKinds)
	switch r.kind {
	case acrossYearEnd:
		srv.set(time.Date(2027, 3, 31, 23, 0, 0, 0, gst.IST))
	case pastTheLease:
		srv.set(time.Date(2027, 3, 31, 23, 40, 0, 0, gst.IST))
	case acrossJune:
		srv.set(time.Date(2026, 6, 30, 21, 0, 0, 0, gst.IST))
	default:
		srv.set(time.Date(2026, 6, 10, 11, 0, 0, 0, gst.IST))
	}
	drops := &randomDrops{rng: rand.New(rand.NewPCG(seed, 0xd20b)), p: 0.2}
	lossy := func() *client.Client {
		return client.New(e.url, e.key, client.WithBackoff(time.Millisecond, 5*time.Millisecond),
			client.WithHTTPClient(&http.Client{Transport: &dropAnswers{base: http.DefaultTransport, drop: func(req *http.Request) bool {
				lost := drops.drop(req)
				if lost && req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/lease") {
					st.AskedAgain++ // the client asks again, with the same key
				}
				return lost
			}}}))
	}
	r.mgr, r.online = lossy(), lossy()
	// A<run> and B<run>, the run in base 36: numbers stay within 16
	// characters.
	id := strings.ToUpper(strconv.FormatInt(int64(run), 36))
	for i, code := range []string{"A" + id, "B" + id} {
		s := testfactory.Series(t, e.pool, e.seller, &testfactory.SeriesOpts{Code: code, Format: code + "/{FY}/{SEQ:4}"})
		n := &tillNet{rng: rand.New(rand.NewPCG(seed, uint64(i+1))), base: http.DefaultTransport}
		r.lanes = append(r.lanes, &lane{code: code, s: s, net: n, paper: map[gst.FY]int64{},
			cl: client.New(e.url, e.key, client.WithBackoff(time.Millisecond, 5*time.Millisecond), client.WithHTTPClient(&http.Client{Transport: n}))})
	}
	return r
}

// fail records a broken check.
func (r *lifecycleRun) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.logf("FAILED: %s", msg)
	r.t.Errorf("seed %d, step %d: %s", r.seed, r.step, msg)
	r.ok = false
}

// logf adds a line to the run's trace, printed when it fails.
func (r *lifecycleRun) logf(format string, args ...any) {
	r.trace = append(r.trace, fmt.Sprintf("%4d %s ", r.step, r.srv.now().In(gst.IST).Format("2006-01-02 15:04"))+fmt.Sprintf(format, args...))
}

// print records number as printed by who; excused when a duplicate of it
// is not the product's doing (see lifecycleRun).
func (r *lifecycleRun) print(number, who string, excused bool) {
	r.logf("printed %s (%s%s)", number, who, map[bool]string{true: ", excused"}[excused])
	first, dup := r.printed[number]
	switch {
	case !dup:
		r.printed[number] = printing{who: who, excused: excused}
	case first.excused || excused || r.released[number]:
		r.st.Excused++
	default:
		r.fail("%s printed by %s and again by %s", number, first.who, who)
	}
}

// play runs the life and reports whether every check held.
func (r *lifecycleRun) play() bool {
	steps := 20 + r.rng.IntN(25)
	jump := 3 + r.rng.IntN(8)
	for r.step = 0; r.step < steps && r.ok; r.step++ {
		if r.kind == pastTheLease && r.step == jump {
			r.srv.set(time.Date(2028, 3, 31, 23, 35, 0, 0, gst.IST))
		}
		// Across 31 March the last hour goes slowly: leases change hands
		// before midnight while tills ahead already number the new year.
		tick := 15
		if r.kind == acrossYearEnd && r.srv.now().In(gst.IST).Month() == time.March {
			tick = 5
		}
		r.srv.set(r.srv.now().Add(time.Duration(r.rng.IntN(tick)) * time.Minute))
		for _, ln := range r.lanes {
			ln.net.weather(r.rng)
			if r.kind == acrossJune && len(r.locks) == 0 && r.rng.IntN(3) > 0 {
				// The shop's link is down this evening: sales and
				// cancels of June wait for the upload, past June's lock.
				ln.net.goDown()
			}
			if r.rng.IntN(5) == 0 {
				if n := ln.net.release(); n > 0 {
					r.logf("%s: %d requests held in flight reach the server", ln.code, n)
					r.st.Held += n
					r.noFutureDates(ln)
				}
			}
		}
		if r.lanes[0].term != nil && r.lanes[1].term != nil {
			r.st.Overlap++
		}
		r.act(r.lanes[r.rng.IntN(len(r.lanes))])
	}
	if r.ok {
		r.windDown()
	}
	return r.ok
}

// act does one random step on ln, drawn by weight among what ln's state
// allows.
func (r *lifecycleRun) act(ln *lane) {
	type op struct {
		weight int
		do     func()
	}
	till := ln.term != nil
	pending := till && ln.term.EndPending()
	// Before midnight of 31 March, devices are lost and settled often:
	// a settlement spends serials of the new year, and the next lease of
	// the series holds them in its later year.
	eve := map[bool]int{true: 4}[r.kind == acrossYearEnd && r.srv.now().In(gst.IST).Month() == time.March]
	// Across 30 June the tills sell and cancel, and their devices stay:
	// June's lock meets their cancels.
	june := r.kind == acrossJune
	calm := map[bool]int{false: 1}[june]
	ops := []op{
		// A lane whose device is lost leases to a new one once the
		// series is free (the lost device never turns up then).
		{map[bool]int{false: 8}[till], func() { r.takeLease(ln) }},
		{map[bool]int{true: 10}[till] + map[bool]int{true: 10}[till && june] + map[bool]int{true: 6}[till && eve > 0], func() { r.sell(ln, fmt.Sprintf("%s-%d", ln.code, r.step), false) }},
		{map[bool]int{true: 4}[till], func() { r.sell(ln, fmt.Sprintf("%s-%d", ln.code, r.step), true) }},
		{map[bool]int{true: 4}[till] + map[bool]int{true: 4}[till && r.kind == acrossJune && len(r.locks) == 0] + map[bool]int{true: 6}[pending], func() { r.cancel(ln) }},
		{map[bool]int{true: 6}[till], func() { r.sync(ln) }},
		{map[bool]int{true: 4}[till], func() { r.end(ln) }},
		{map[bool]int{true: 2}[till] + map[bool]int{true: 6}[pending], func() { r.crash(ln) }},
		{map[bool]int{true: 2}[till], func() { r.reprint(ln) }},
		{map[bool]int{true: calm}[till], func() { r.damage(ln) }},
		{map[bool]int{true: calm + eve}[till], func() {
			// The device is lost; the manager often ends its lease by
			// force at once, and the accountant settles it.
			r.logf("%s: the device is lost", ln.code)
			ln.term.Close()
			ln.term, ln.lost = nil, true
			if eve > 0 || r.rng.IntN(3) > 0 {
				r.force(ln)
				if r.ok && (eve > 0 || r.rng.IntN(3) > 0) {
					r.settle(ln, r.rng.IntN(3) == 0)
				}
			}
		}},
		{map[bool]int{true: 3}[ln.lost && !ln.broken], func() { r.turnUp(ln) }},
		// The manager ends by force a lease whose till cannot learn
		// whether its end went through.
		{2*calm + eve + map[bool]int{true: 8}[pending], func() { r.force(ln) }},
		{3 + eve, func() { r.settle(ln, r.rng.IntN(3) == 0) }},
		{r.lockWeight(), r.lockMonth},
		{2, func() { r.tamper(ln) }},
		{map[bool]int{true: 1}[till], func() {
			ln.skew = r.skew()
			r.logf("%s: the till's clock is set %s off", ln.code, ln.skew)
		}},
		{1, func() { r.askLeaseAgain(ln) }},
		{map[bool]int{true: 2}[till && !pending], func() { r.stuckEnd(ln) }},
		{4, func() { r.issueOnline(ln) }},
	}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	n := r.rng.IntN(total)
	for _, o := range ops {
		if n < o.weight {
			o.do()
			return
		}
		n -= o.weight
	}
}

// lockWeight returns the weight of locking a month now: once a run, in
// the runs that lock (not those across 31 March: the database's own clock
// refuses a lock of a month it has not finished), and across 30 June only
// once the server's date is in July, when the tills' June invoices and
// cancels may wait for an upload.
func (r *lifecycleRun) lockWeight() int {
	switch {
	case len(r.locks) > 0:
		return 0
	case r.kind == ordinary:
		return 3
	case r.kind == acrossJune && r.srv.now().In(gst.IST).Month() == time.July:
		return 12
	}
	return 0
}

// skew returns a random till clock skew: mostly minutes to hours either
// way, sometimes a day behind the lease (refused) or up to four days
// ahead (its invoices are refused until the server's date nears theirs).
func (r *lifecycleRun) skew() time.Duration {
	if r.kind == acrossYearEnd && r.rng.IntN(2) == 0 {
		return time.Duration(10+r.rng.IntN(30*60)) * time.Minute // into the new year before the server
	}
	switch x := r.rng.IntN(10); {
	case x < 5:
		return time.Duration(r.rng.IntN(6*60)-3*60) * time.Minute
	case x < 7:
		return -time.Duration(3*60+r.rng.IntN(23*60)) * time.Minute
	case x < 9:
		return time.Duration(3*60+r.rng.IntN(93*60)) * time.Minute
	}
	return 0
}

// clock returns ln's till clock.
func (r *lifecycleRun) clock(ln *lane) func() time.Time {
	return func() time.Time { return r.srv.now().Add(ln.skew) }
}

// holder returns the lease holding ln's series (nil when none), read
// reliably.
func (r *lifecycleRun) holder(ln *lane) *client.Lease {
	l, err := r.e.all.GetLease(r.ctx, ln.code, "")
	var ce *client.Error
	if errors.As(err, &ce) && ce.Code == client.CodeLeaseNotFound {
		return nil
	}
	if err != nil {
		r.fail("read the holder of %s: %v", ln.code, err)
		return nil
	}
	return &l
}

// takeLease leases ln's series to its till over the manager's lossy
// network: a free series must be leased (a lost answer is asked again);
// a held one is refused lease_held.
func (r *lifecycleRun) takeLease(ln *lane) {
	held := r.holder(ln)
	if !r.ok {
		return
	}
	key := fmt.Sprintf("take-%d-%s-%d", r.seed, ln.code, r.step)
	ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
	l, err := r.mgr.Lease(ctx, ln.code, "till", client.IdempotencyKey(key))
	cancel()
	var ce *client.Error
	switch {
	case held != nil && err == nil:
		r.fail("lease of %s taken while %s's lease holds it", ln.code, held.DeviceID)
	case held != nil && !(errors.As(err, &ce) && ce.Code == client.CodeLeaseHeld):
		r.fail("lease of held %s: %v, want lease_held", ln.code, err)
	case held != nil:
	case err != nil:
		r.fail("lease of free %s: %v", ln.code, err)
	default:
		r.startLease(ln, l, key)
	}
}

// startLease opens a journal for lease l of ln (taken with key).
func (r *lifecycleRun) startLease(ln *lane, l client.Lease, key string) {
	ln.path = filepath.Join(r.e.dir, fmt.Sprintf("%s-%d.journal", ln.code, r.step))
	ln.skew, ln.lease, ln.key = r.skew(), l, key
	ln.lost, ln.broken, ln.unheard = false, false, false
	ln.paper, ln.receipts, ln.cancels = map[gst.FY]int64{}, nil, nil
	nb, _ := time.Parse(time.RFC3339Nano, l.NotBefore)
	ln.lastAt = nb
	r.logf("%s: leased %s from %s (years %+v, not before %s), the till's clock %s off", ln.code, l.LeaseID, l.Next.FY, l.Years, l.NotBefore, ln.skew)
	// The lease answers where each year stands (nothing else writes the
	// series while it holds it).
	ln.later = 0
	for i, p := range l.Years {
		fy, _ := gst.ParseFY(p.FY)
		at := r.stored(ln, fy)
		if p.Serial != at.Serial || p.ChainLength != at.ChainLength {
			r.fail("the lease of %s answers %s at serial %d (chain %d); the series stands at %d (chain %d)", ln.code, fy, p.Serial, p.ChainLength, at.Serial, at.ChainLength)
		}
		if i > 0 && at.Serial > 1 {
			ln.later = fy
		}
	}
	var err error
	if ln.term, err = offline.Create(ln.path, l, r.clock(ln)); err != nil {
		r.fail("create the journal of %s: %v", ln.code, err)
	}
}

// sell rings up a sale (a large one when big) under key on ln's till and
// checks its receipt's time, date and year.
func (r *lifecycleRun) sell(ln *lane, key string, big bool) (offline.Receipt, bool) {
	req := sale(0)
	if big {
		req = bigSale(12 + r.rng.IntN(20))
	}
	now := r.clock(ln)().UTC().Truncate(time.Microsecond)
	nb, _ := time.Parse(time.RFC3339Nano, ln.lease.NotBefore)
	rec, err := ln.term.IssueKeyed(key, req)
	want := now
	if want.Before(ln.lastAt) {
		want = ln.lastAt
	}
	switch {
	case err == nil && gst.DateIST(now).Before(gst.DateIST(nb)):
		r.fail("%s's till sold %s with its clock (%s) on a date before the lease's floor (%s)", ln.code, rec.Number, now, nb)
	case err == nil && !rec.IssuedAt.Equal(want):
		r.fail("%s's till issued %s at %s with its clock at %s and its last record at %s; want %s", ln.code, rec.Number, rec.IssuedAt, now, ln.lastAt, want)
	case err == nil && !ln.reserved(gst.FYAt(want)):
		r.fail("%s's till numbered %s in %s, which its lease does not reserve (%+v)", ln.code, rec.Number, gst.FYAt(want), ln.lease.Years)
	case err == nil:
		r.heard(ln)
		r.print(rec.Number, "the till of "+ln.code, ln.unheard)
		if gst.FYAt(want) == ln.later {
			r.st.LaterYear++
		}
		ln.paper[gst.FYAt(want)] = max(ln.paper[gst.FYAt(want)], rec.Serial)
		ln.receipts, ln.lastAt = append(ln.receipts, rec), rec.IssuedAt
		return rec, true
	case errors.Is(err, offline.ErrClockBehind):
		if !gst.DateIST(now).Before(gst.DateIST(nb)) {
			r.fail("%s's till refused a sale as a clock behind (%s, floor %s): %v", ln.code, now, nb, err)
		}
		r.st.ClockBehind++
		if r.rng.IntN(2) == 0 {
			ln.skew = 0 // the shop sets the clock
		}
	case errors.Is(err, offline.ErrYearNotLeased):
		if ln.reserved(gst.FYAt(want)) {
			r.fail("%s's till refused a sale in %s, a year its lease reserves: %v", ln.code, gst.FYAt(want), err)
		}
		r.st.YearNotLeased++
	case errors.Is(err, offline.ErrEndPending):
		r.st.PendingRefused++
	case errors.Is(err, offline.ErrEnded), errors.Is(err, offline.ErrLeaseInDoubt):
	default:
		r.fail("sell in %s: %v", ln.code, err)
	}
	r.logf("%s: the till refused the sale: %v", ln.code, err)
	return offline.Receipt{}, false
}

// heard notes when an answer reached ln's till since its lease was
// settled: from then on it may not print.
func (r *lifecycleRun) heard(ln *lane) {
	if ln.net.hasHeard() {
		ln.unheard = false
	}
}

// bigSale is a sale of n items with long descriptions.
func bigSale(n int) client.IssueRequest {
	var req client.IssueRequest
	for i := range n {
		req.Items = append(req.Items, client.ItemInput{Description: "Hand-loomed cotton saree, pattern " + strconv.Itoa(i) + strings.Repeat(" with zari border", 12),
			HSN: "5208", Quantity: "1", UnitPrice: "12.50", GSTRate: "5"}) // under ₹50,000 a sale: Rule 46(e) asks no address
	}
	return req
}

// cancel cancels one of ln's till's invoices.
func (r *lifecycleRun) cancel(ln *lane) {
	if len(ln.receipts) == 0 {
		return
	}
	rec := ln.receipts[len(ln.receipts)-1-r.rng.IntN(min(3, len(ln.receipts)))]
	c, err := ln.term.Cancel(rec.Number, "returned")
	switch {
	case err == nil:
		r.heard(ln)
		ln.cancels = append(ln.cancels, c)
		ln.lastAt = maxTime(ln.lastAt, c.CancelledAt)
		r.logf("%s: the till cancelled %s", ln.code, rec.Number)
	case errors.Is(err, offline.ErrEndPending), errors.Is(err, offline.ErrEnded), errors.Is(err, offline.ErrLeaseInDoubt),
		errors.Is(err, offline.ErrAlreadyCancelled), errors.Is(err, offline.ErrCancelRefused):
		r.logf("%s: cancel of %s refused: %v", ln.code, rec.Number, err)
	default:
		r.fail("cancel %s: %v", rec.Number, err)
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// sync uploads ln's till's records.
func (r *lifecycleRun) sync(ln *lane) {
	if r.bigPending(ln) >= 2 {
		r.st.BigSyncs++
	}
	ctx, done := ln.net.op(r.ctx)
	n, err := ln.term.Sync(ctx, ln.cl)
	done()
	r.logf("%s: sync stored %d: %v", ln.code, n, err)
	r.afterTill(ln, err)
}

// bigPending returns how many of ln's last receipts are large sales.
func (r *lifecycleRun) bigPending(ln *lane) int {
	n := 0
	for _, rec := range ln.receipts[max(0, len(ln.receipts)-ln.term.Pending()):] {
		if len(rec.Invoice.Items) > 2 {
			n++
		}
	}
	return n
}

// afterTill handles the outcome err of a till's Sync or End: a lease
// settled otherwise ends the till (and only a settlement by the
// accountant may leave records unuploaded: the till's own end uploaded
// everything, and it journals nothing after asking to end).
func (r *lifecycleRun) afterTill(ln *lane, err error) {
	r.heard(ln)
	var nu *offline.NotUploadedError
	if errors.As(err, &nu) && len(nu.Records) > 0 && !r.accountantSettled[ln.lease.LeaseID] {
		r.fail("%s's lease %s ended by its device (%s at serial %d of %s), yet the till holds records never uploaded: %v", ln.code, ln.lease.LeaseID, nu.Lease.EndKind, nu.Lease.EndSerial, nu.Lease.EndFY, err)
	}
	r.noFutureDates(ln)
	if errors.Is(err, offline.ErrEnded) {
		r.logf("%s: the till learnt its lease was settled", ln.code)
		r.retire(ln)
	}
}

// end ends ln's till's lease; when it ends, everything the till
// journaled must be stored.
func (r *lifecycleRun) end(ln *lane) bool {
	held := r.holder(ln)
	ctx, done := ln.net.op(r.ctx)
	l, err := ln.term.End(ctx, ln.cl)
	done()
	r.logf("%s: End: %v", ln.code, err)
	if err != nil {
		r.afterTill(ln, err)
		return errors.Is(err, offline.ErrEnded)
	}
	if held != nil && held.EndedAt != "" {
		r.st.EndedAfterHeld++
	}
	r.heard(ln)
	r.allUploaded(ln, l)
	r.retire(ln)
	return true
}

// stuckEnd: ln's till asks to end its lease on a link that holds the end
// request in flight and loses every resume's answer (the server moves the
// lease's end epoch on; the till never learns it), so the end stays
// pending; the manager then ends the lease by force. The till that turns
// up must settle the lease with its own End, at the lease's epoch
// (docs/offline.md, invariant 13): the wind-down fails the run otherwise.
func (r *lifecycleRun) stuckEnd(ln *lane) {
	r.logf("%s: the till ends on a link that holds its end and loses its resumes' answers", ln.code)
	ln.net.endWith(true, heldInFlight, answerLost)
	r.end(ln)
	ln.net.endWith(false, 0, 0)
	if ln.term != nil && ln.term.EndPending() && r.ok {
		r.st.StuckEnds++
		r.force(ln)
	}
}

// retire closes ln's till, its lease ended, and counts the cancels the
// server refused it for a locked month.
func (r *lifecycleRun) retire(ln *lane) {
	r.st.Voided += len(ln.term.RefusedCancels())
	ln.term.Close()
	ln.term = nil
}

// crash closes ln's till's journal and opens it again, as after a power
// cut.
func (r *lifecycleRun) crash(ln *lane) {
	ln.term.Close()
	var err error
	if ln.term, err = offline.Open(ln.path, r.clock(ln)); err != nil {
		r.fail("reopen %s: %v", ln.code, err)
	}
	r.logf("%s: the till crashed and restarted", ln.code)
}

// reprint journals a sale, crashes before the printer, and rings the
// sale up again with the same key: the same number, never a second one.
func (r *lifecycleRun) reprint(ln *lane) {
	key := fmt.Sprintf("%s-%d-crash", ln.code, r.step)
	first, err := ln.term.IssueKeyed(key, sale(1))
	if err != nil {
		r.logf("%s: the till refused the sale: %v", ln.code, err)
		return
	}
	r.crash(ln)
	if !r.ok {
		return
	}
	again, err := ln.term.IssueKeyed(key, sale(1))
	if err != nil || !again.Replayed || again.Number != first.Number {
		r.fail("%s rung up again after a crash before printing: %s (replayed %v), %v; want %s again", key, again.Number, again.Replayed, err, first.Number)
		return
	}
	r.st.Reprinted++
	r.print(again.Number, "the till of "+ln.code+" (after a crash)", ln.unheard)
	ln.paper[gst.FYAt(again.IssuedAt)] = max(ln.paper[gst.FYAt(again.IssuedAt)], again.Serial)
	ln.receipts, ln.lastAt = append(ln.receipts, again), maxTime(ln.lastAt, again.IssuedAt)
}

// damage flips one bit of ln's journal, at a random offset (half the
// time in its last record), and opens it: the journal must be refused
// (ErrCorrupt). The device is then broken: its lease waits for a forced
// end and a settlement from the paper trail.
func (r *lifecycleRun) damage(ln *lane) {
	ln.term.Close()
	ln.term = nil
	b, err := os.ReadFile(ln.path)
	if err != nil {
		r.fail("read %s's journal: %v", ln.code, err)
		return
	}
	// Anywhere, in a record's length, or in the last record.
	var at int
	switch starts := recordStarts(b); r.rng.IntN(3) {
	case 0:
		at = r.rng.IntN(len(b))
	case 1:
		at = starts[r.rng.IntN(len(starts))] + r.rng.IntN(4)
	default:
		last := starts[len(starts)-1]
		at = last + r.rng.IntN(len(b)-last)
	}
	b[at] ^= 1 << r.rng.IntN(8)
	if err := os.WriteFile(ln.path, b, 0o600); err != nil {
		r.fail("damage %s's journal: %v", ln.code, err)
		return
	}
	t, err := offline.Open(ln.path, r.clock(ln))
	if err == nil {
		t.Close()
		r.fail("%s's journal, a bit flipped at offset %d of %d, opened", ln.code, at, len(b))
		return
	}
	if !errors.Is(err, offline.ErrCorrupt) {
		r.fail("%s's damaged journal: %v, want ErrCorrupt", ln.code, err)
	}
	r.logf("%s: the journal is damaged at %d of %d: %v", ln.code, at, len(b), err)
	r.st.Damaged++
	ln.lost, ln.broken = true, true
}

// recordStarts returns the offsets of the records of journal b (each a
// 4-byte length, a 4-byte checksum and the payload).
func recordStarts(b []byte) []int {
	var out []int
	for off := 0; off+8 <= len(b); off += 8 + int(binary.LittleEndian.Uint32(b[off:])) {
		out = append(out, off)
	}
	return out
}

// turnUp reopens a lost device's journal.
func (r *lifecycleRun) turnUp(ln *lane) {
	var err error
	if ln.term, err = offline.Open(ln.path, r.clock(ln)); err != nil {
		r.fail("the lost device of %s turned up: %v", ln.code, err)
		return
	}
	ln.lost = false
	r.st.TurnedUp++
	r.logf("%s: the lost device turned up", ln.code)
}

// issueOnline issues an invoice of ln's series online.
func (r *lifecycleRun) issueOnline(ln *lane) {
	ctx, cancel := context.WithTimeout(r.ctx, 3*time.Second)
	inv, err := r.online.IssueInvoice(ctx, ln.code, sale(0))
	cancel()
	var ce *client.Error
	switch {
	case err == nil:
		r.print(inv.Number, "online", false)
	case errors.As(err, &ce) && (ce.Code == client.CodeSeriesLeased || ce.Code == client.CodeDateOutOfOrder):
	case client.IsOutcomeUnknown(err):
	default:
		r.fail("online in %s: %v", ln.code, err)
	}
}

// lockMonth has the accountant lock the month before the server's.
func (r *lifecycleRun) lockMonth() {
	now := r.srv.now().In(gst.IST)
	m := time.Date(now.Year(), now.Month()-1, 1, 0, 0, 0, 0, time.UTC)
	ml := monthLock{month: m, held: map[string]bool{}}
	for _, ln := range r.lanes {
		if err := inMonth(r.ctx, r.e, ln.code, m, ml.held); err != nil {
			r.fail("read %s: %v", ln.code, err)
			return
		}
	}
	if _, err := r.e.all.LockPeriod(r.ctx, m.Format("012006")); err != nil {
		r.fail("lock %s: %v", ml, err)
		return
	}
	r.logf("the accountant locked %s", ml)
	r.locks = append(r.locks, ml)
	r.st.Locks++
}

// noFutureDates checks that ln's series holds no invoice dated after the
// server's tomorrow.
func (r *lifecycleRun) noFutureDates(ln *lane) {
	var last *time.Time
	if err := r.e.pool.QueryRow(r.ctx, `SELECT max(invoice_date) FROM invoices WHERE series_id = $1`, ln.s.ID).Scan(&last); err != nil {
		r.fail("read %s: %v", ln.code, err)
		return
	}
	if tomorrow := gst.DateIST(r.srv.now()).AddDate(0, 0, 1); last != nil && last.After(tomorrow) {
		r.fail("%s holds an invoice dated %s, after the server's tomorrow %s", ln.code, last.Format(time.DateOnly), tomorrow.Format(time.DateOnly))
	}
}

// windDown ends the run: held requests arrive, links come up, the
// server's clock passes the tills'; each till still working ends its
// lease (which must succeed, whatever happened), each lease still held
// is ended by force and settled from the paper trail; then online
// issuance prints in each series, never a number printed before, and no
// invoice of a locked month was stored or cancelled after its lock
// (a till's late upload of invoices excepted).
func (r *lifecycleRun) windDown() {
	r.step = -1
	latest := r.srv.now()
	for _, ln := range r.lanes {
		r.st.Held += ln.net.release()
		r.st.Down += ln.net.wentDown
		ln.net.calm()
		r.noFutureDates(ln)
		if ln.term != nil {
			latest = maxTime(latest, ln.lastAt)
		}
	}
	// Past the tills' last records: a till whose clock ran ahead
	// uploads once the server's date is a day before theirs.
	r.srv.set(latest.Add(time.Minute))
	for _, ln := range r.lanes {
		for try := 0; ln.term != nil && r.ok; try++ {
			if try == 8 {
				r.fail("the till of %s never ended its lease", ln.code)
				return
			}
			r.end(ln)
		}
	}
	for _, ln := range r.lanes {
		if h := r.holder(ln); h != nil && r.ok {
			if h.EndedAt == "" {
				r.force(ln)
			}
			r.settle(ln, true)
			if r.holder(ln) != nil && r.ok {
				r.fail("%s still held after the wind-down", ln.code)
			}
		}
	}
	for _, ln := range r.lanes {
		for range 2 {
			var inv client.Invoice
			var err error
			for range 6 {
				if inv, err = r.e.all.IssueInvoice(r.ctx, ln.code, sale(0)); err == nil {
					break
				}
				// A till's clock ran ahead: its invoices are dated
				// after today.
				r.srv.set(r.srv.now().Add(24 * time.Hour))
			}
			if err != nil {
				r.fail("online in %s after the lease: %v", ln.code, err)
				return
			}
			r.print(inv.Number, "online after the lease", false)
		}
	}
	r.checkLocks()
}

// checkLocks checks that no invoice of a locked month was stored or
// cancelled after its lock, except a till's late upload of invoices it
// issued under its lease (docs/offline.md, "Not done"), and unlocks the
// months for the next run.
func (r *lifecycleRun) checkLocks() {
	for _, ml := range r.locks {
		now := map[string]bool{}
		for _, ln := range r.lanes {
			if err := inMonth(r.ctx, r.e, ln.code, ml.month, now); err != nil {
				r.fail("read %s: %v", ln.code, err)
				return
			}
		}
		for number, cancelled := range now {
			was, before := ml.held[number]
			switch {
			case !before && !strings.HasPrefix(r.printed[number].who, "the till"):
				r.fail("%s, dated in %s, stored after the month was locked by %q", number, ml, r.printed[number].who)
			case cancelled && !(before && was):
				r.fail("%s, dated in %s, cancelled after the month was locked", number, ml)
			case !before:
				r.st.LateInto++
			}
		}
		if err := invoice.UnlockPeriod(r.ctx, r.e.pool, r.e.seller, document.MonthOf(ml.month), "test", "the next run", r.srv.now()); err != nil {
			r.fail("unlock: %v", err)
		}
	}
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
