package invoice

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/dbfault"
	"github.com/invoiced/invoiced/series"
)

// Committer issues invoices, gathering concurrent requests into one
// transaction (group commit): one statement takes consecutive numbers for
// every series in the batch, the invoices, chain records and idempotency
// keys are inserted together, and one COMMIT makes them all durable.
// Nobody waits for a timer: while one batch commits, new arrivals queue,
// and the next batch takes all of them, so at low load a batch is a single
// invoice and at high load one lock hold and one WAL flush are shared by
// many invoices, of one series or of many.
//
// Requests are queued per (series, invoice date). A batch takes the queues
// of many series, one date per series and year. If its counter locks are
// not had quickly (another process or a library user holds one), the
// batch is split: each series is retried in a transaction of its own with
// the full lock timeout, and the series of that batch are batched alone
// for a few seconds, so a stuck series never holds the others up.
//
// A batch that fails does not fail its neighbours: members are validated
// before they join (Prepare); a series refused on its own (date out of
// order, exhausted) fails only its members; and when the transaction fails
// for a reason that is not common to all members, each member is retried
// alone. A rolled-back batch returns all its numbers. Several processes on
// one database stay correct: the counter row locks still serialise them.
type Committer struct {
	DB      Beginner
	Options series.Options
	// Batching off issues each invoice in its own transaction in the
	// caller's goroutine: the classic design, kept for comparison.
	Batching bool
	// MaxBatch caps the invoices per transaction (default 512).
	MaxBatch int
	Logger   *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// DateWindow, when set, is the window each request's invoice date must
	// lie in, judged by Now inside the request's transaction, after its
	// idempotency key is claimed: a replay, then a key in progress, are
	// answered first, and a refusal for the date is given only under the
	// key's lock. So while an attempt with the key may still commit (it
	// waits in a queue of this or another process), a retry is never
	// refused for a date that has meanwhile fallen out of the window (IST
	// midnight): it waits for the attempt, or is told the key is in
	// progress, or replays it. Nil: the caller judged the dates (Prepare).
	DateWindow *Policy
	// DateClock is the clock DateWindow is judged by (default Now).
	DateClock DateClock
	// InFlight is how many shared transactions may be open at once
	// (default 1). With 2, while one holds counter rows the next claims
	// its keys and then waits for the rows, so their round trips overlap;
	// it helps only when the database is far away.
	InFlight int
	// Predict lets a batch whose counter rows this Committer wrote last
	// take its numbers from the state it remembers: claims, counter
	// update, inserts and COMMIT then go in one round trip instead of
	// three, and the database checks the prediction under the row locks.
	// A batch whose prediction fails took nothing and is issued the
	// ordinary way; its series are not predicted for a few seconds.
	Predict bool
	// Observer, when set, is told about each transaction (metrics).
	Observer Observer

	mu        sync.Mutex
	groups    map[groupKey]*group
	shared    int                  // shared drainers running
	soloUntil map[rowKey]time.Time // rows batched alone until then
	solo      map[rowKey]bool      // rows whose own drainer is running
	stats     Stats
	// For Predict: the state each counter row was left in by this
	// Committer's last transaction on it, the transactions running on each
	// row, and the rows not to predict until then.
	states     map[rowKey]series.State
	flying     map[rowKey]int
	predicting map[rowKey]bool // rows of a predicted transaction running
	unstable   map[rowKey]time.Time
	// taken marks the rows reserved by a batch, from the moment it is
	// selected until its transaction and any retries of its members end
	// (release). A row has at most one reservation, so within one process
	// the transactions of one counter row never overlap: a later invoice
	// date cannot commit before an earlier one that was queued first, and
	// no valid date is refused date_out_of_order by the Committer's own
	// reordering. Transactions of the Committer without a reservation are
	// only those of Batching off (the classic design).
	taken map[rowKey]int
}

// DateClock names the clock a Committer judges DateWindow by.
type DateClock int

const (
	// ProcessClock judges by Committer.Now.
	ProcessClock DateClock = iota
	// DatabaseClock judges by the database server's clock, read in the
	// transaction after its idempotency keys are locked: every process on
	// one database agrees on "today", and an attempt with a key that got
	// the key's lock after another attempt released it is judged by a
	// clock that is not behind the other's. A transaction without keys,
	// which no retry can be matched with, is judged by Now.
	DatabaseClock
)

// Stats counts what a Committer has done.
type Stats struct {
	Batches  int64 // transactions committed
	Invoices int64 // invoices committed
	Retries  int64 // batches split into smaller retries
	MaxBatch int   // most invoices taken for one transaction
	// Predicted counts transactions committed in one round trip from
	// predicted counter states; Mispredicted those whose prediction failed
	// (they were then issued the ordinary way).
	Predicted    int64
	Mispredicted int64
}

type groupKey struct {
	seriesID int64
	date     time.Time
}

// rowKey names a counter row: a series and financial year.
type rowKey struct {
	id int64
	fy series.FY
}

// row returns the counter row that numbers the queue k.
func (k groupKey) row() rowKey { return rowKey{k.seriesID, series.FYOf(k.date)} }

// keyID names an idempotency key of a seller in in-memory sets.
func keyID(sellerID int64, key string) string { return strconv.FormatInt(sellerID, 10) + "\x00" + key }

// group is the queue of one series and invoice date. The queues of a row
// batched alone (soloUntil) are served by the row's own drainer
// (drainSolo), the others by the shared drainers.
type group struct {
	pending []*call
}

// IssueRequest is one invoice to issue.
type IssueRequest struct {
	Seller series.Seller
	Series series.Series
	Draft  Draft
}

// Result is the outcome of one request: the invoice, whether it is a replay
// of an earlier request with the same Idempotency-Key, or an error.
type Result struct {
	Invoice  Invoice
	Replayed bool
	Err      error
}

type call struct {
	req      IssueRequest
	res      Result
	answered bool
	done     chan struct{}
	// taken is set, under Committer.mu, when a batch takes the call out of
	// its queue: from then on a transaction may commit it.
	taken bool
	// unit is the IssueBatch the call belongs to, nil for Issue.
	unit *batchUnit
}

// soloFor is how long the series of a batch that could not get its locks
// quickly are batched alone; sharedLockWait is how long a shared batch
// waits for its locks before it is split; unstableFor is how long a counter
// row whose prediction failed is not predicted.
const (
	soloFor        = 5 * time.Second
	sharedLockWait = 250 * time.Millisecond
	unstableFor    = 5 * time.Second
)

// Issue issues one invoice and returns its result. With an idempotency key
// on the draft, a key that already answered an identical request returns
// that invoice with Replayed set; a key held by a request still running
// returns ErrKeyInProgress; a key used for another request ErrKeyReused.
// Other errors are those of IssueTx. If ctx ends while the request still
// waits in its queue, the request leaves the queue and Issue returns
// ctx.Err(): the invoice is not issued. If ctx ends once a transaction took
// the request, Issue returns ErrOutcomeUnknown: that transaction may still
// commit it, and a retry with the same idempotency key finds out.
func (c *Committer) Issue(ctx context.Context, req IssueRequest) Result {
	if !c.Batching {
		return c.single(ctx, req)
	}
	k := groupKey{req.Series.ID, req.Draft.InvoiceDate}
	cl := &call{req: req, done: make(chan struct{})}
	c.mu.Lock()
	if c.groups == nil {
		c.groups = map[groupKey]*group{}
	}
	g := c.groups[k]
	if g == nil {
		g = &group{}
		c.groups[k] = g
	}
	g.pending = append(g.pending, cl)
	switch rk := k.row(); {
	case c.solo[rk]:
		// its own drainer is running and will take it
	case time.Now().Before(c.soloUntil[rk]):
		c.startSolo(rk)
	case c.shared < c.inFlight():
		c.shared++
		go c.drainShared()
	}
	c.mu.Unlock()
	select {
	case <-cl.done:
		return cl.res
	case <-ctx.Done():
		return c.abandon(ctx, k, cl)
	}
}

// errGaveUp is ErrOutcomeUnknown for a caller whose deadline passed while
// a transaction held its request.
var errGaveUp = apperr.Errorf(ErrOutcomeUnknown, "the request's deadline passed while its transaction was running, which may still issue the invoice; retry with the same Idempotency-Key to learn the outcome")

// abandon answers a caller of Issue whose ctx ended before cl was answered:
// a call still queued leaves its queue (nothing will issue it) and gets
// ctx.Err(); a call a batch has taken gets errGaveUp, unless it was
// answered meanwhile.
func (c *Committer) abandon(ctx context.Context, k groupKey, cl *call) Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-cl.done:
		return cl.res
	default:
	}
	if cl.taken {
		return Result{Err: errGaveUp}
	}
	if g := c.groups[k]; g != nil {
		g.pending = slices.DeleteFunc(g.pending, func(o *call) bool { return o == cl })
		if len(g.pending) == 0 {
			delete(c.groups, k)
		}
	}
	return Result{Err: ctx.Err()}
}

// take marks the calls of batch taken by a transaction. c.mu must be held.
func take(batch []*call) []*call {
	for _, cl := range batch {
		cl.taken = true
	}
	return batch
}

// Stats returns a snapshot of the counters.
func (c *Committer) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

func (c *Committer) maxBatch() int {
	if c.MaxBatch > 0 {
		return c.MaxBatch
	}
	return 512
}

// drainShared runs batches over every shared queue until all are empty.
func (c *Committer) drainShared() {
	for {
		c.mu.Lock()
		parts, keys, taken := c.takeShared(time.Now())
		if taken == 0 {
			// takeShared removed every queue it emptied; the rest hold
			// requests that wait for a reserved row (release starts a
			// drainer when it ends), or are solo.
			c.shared--
			c.mu.Unlock()
			return
		}
		c.stats.MaxBatch = max(c.stats.MaxBatch, taken)
		c.mu.Unlock()
		c.flushShared(parts, keys)
	}
}

// takeShared selects the next shared batch: from each shared queue with
// requests whose row no other batch has reserved, oldest invoice date
// first, at most one date per series and year, up to maxBatch invoices in
// all. It returns the selected requests per queue, their queue keys and
// how many there are, and reserves the rows in c.taken. A queue it empties
// leaves c.groups (the next request makes a new one), so a selection costs
// what the queues hold, not every series seen since the drainer started.
// Rows batched alone for now get their own drainer. c.mu must be held.
func (c *Committer) takeShared(now time.Time) (parts [][]*call, keys []groupKey, taken int) {
	// Oldest invoice date first, so that a series-year's dates are
	// numbered in date order.
	order := make([]groupKey, 0, len(c.groups))
	for k, g := range c.groups {
		if len(g.pending) > 0 && !c.solo[k.row()] {
			order = append(order, k)
		}
	}
	slices.SortFunc(order, func(a, b groupKey) int { return a.date.Compare(b.date) })
	years := map[rowKey]bool{}
	for _, k := range order {
		if taken >= c.maxBatch() {
			break
		}
		g, rk := c.groups[k], k.row()
		if c.solo[rk] {
			continue // made solo by an earlier queue of this selection
		}
		if now.Before(c.soloUntil[rk]) {
			c.startSolo(rk)
			continue
		}
		// One date per series and year in a transaction; another date
		// waits for the next batch, as does a row reserved by another
		// batch: one transaction per row at a time.
		if years[rk] || c.taken[rk] > 0 {
			continue
		}
		years[rk] = true
		c.reserve(rk)
		n := cutAt(g.pending, min(len(g.pending), c.maxBatch()-taken))
		parts = append(parts, take(g.pending[:n:n]))
		keys = append(keys, k)
		g.pending = g.pending[n:]
		taken += n
		if len(g.pending) == 0 {
			delete(c.groups, k)
		}
	}
	return parts, keys, taken
}

// startSolo starts the own drainer of row rk. c.mu must be held.
func (c *Committer) startSolo(rk rowKey) {
	if c.solo == nil {
		c.solo = map[rowKey]bool{}
	}
	c.solo[rk] = true
	go c.drainSolo(rk)
}

// drainSolo runs batches for the queues of one row, oldest invoice date
// first, until they are empty or the row is reserved by another batch
// (whose release starts the drainer again).
func (c *Committer) drainSolo(rk rowKey) {
	for {
		c.mu.Lock()
		var k groupKey
		var g *group
		if c.taken[rk] == 0 {
			for qk, qg := range c.groups {
				if qk.row() == rk && len(qg.pending) > 0 && (g == nil || qk.date.Before(k.date)) {
					k, g = qk, qg
				}
			}
		}
		if g == nil {
			delete(c.solo, rk)
			if !time.Now().Before(c.soloUntil[rk]) {
				delete(c.soloUntil, rk)
			}
			c.mu.Unlock()
			return
		}
		n := cutAt(g.pending, min(len(g.pending), c.maxBatch()))
		batch := take(g.pending[:n:n])
		if g.pending = g.pending[n:]; len(g.pending) == 0 {
			delete(c.groups, k)
		}
		c.reserve(rk)
		c.stats.MaxBatch = max(c.stats.MaxBatch, n)
		c.mu.Unlock()
		c.flush(batch, c.Options, true)
		c.release([]groupKey{k})
	}
}

// reserve reserves row rk for a batch (see Committer.taken). c.mu must be
// held and the row free.
func (c *Committer) reserve(rk rowKey) {
	if c.taken == nil {
		c.taken = map[rowKey]int{}
	}
	if c.taken[rk] != 0 {
		panic("invoice: a counter row reserved twice")
	}
	c.taken[rk] = 1
}

// flushShared runs one transaction for the queues of one or more series,
// waiting at most sharedLockWait for their counter locks. When it fails as
// a whole, each series is retried in a transaction of its own, in the
// background and with the full lock timeout, so the shared drainer goes on
// at once; after a lock wait those series are batched alone for soloFor.
// The rows stay reserved until their retries end.
func (c *Committer) flushShared(parts [][]*call, keys []groupKey) {
	held := keys
	defer func() { c.release(held) }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opt := c.Options
	if opt.LockTimeout <= 0 || opt.LockTimeout > sharedLockWait {
		opt.LockTimeout = sharedLockWait
	} else if len(parts) == 1 {
		// The short wait is the series' own: nothing to split off.
		c.flush(parts[0], opt, true)
		return
	}
	err := c.run(ctx, parts, opt, retrySeriesAlone, true)
	if err == nil || !retrySeriesAlone(err) {
		return
	}
	c.mu.Lock()
	c.stats.Retries++
	if errors.Is(err, series.ErrLockTimeout) {
		if c.soloUntil == nil {
			c.soloUntil = map[rowKey]time.Time{}
		}
		until := time.Now().Add(soloFor)
		for _, k := range keys {
			c.soloUntil[k.row()] = until
		}
	}
	c.mu.Unlock()
	if c.Logger != nil {
		c.Logger.Warn("group commit: shared batch failed, retrying each series alone", "series", len(parts), "err", err)
	}
	// Each series' retry keeps its row reserved until it ends.
	held = nil
	for i, part := range parts {
		var rest []*call
		for _, cl := range part {
			if !cl.answered {
				rest = append(rest, cl)
			}
		}
		if len(rest) == 0 {
			c.release(keys[i : i+1])
			continue
		}
		go func() {
			defer c.release(keys[i : i+1])
			c.flush(rest, c.Options, true)
		}()
	}
}

// release ends the reservation of the rows of keys and makes sure that
// requests waiting for them are served: by the row's own drainer when it
// is batched alone, by a shared drainer otherwise.
func (c *Committer) release(keys []groupKey) {
	if len(keys) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		rk := k.row()
		if c.taken[rk] != 1 {
			panic("invoice: a counter row released without its reservation")
		}
		delete(c.taken, rk)
	}
	now := time.Now()
	for _, k := range keys {
		rk := k.row()
		if c.solo[rk] || !now.Before(c.soloUntil[rk]) {
			continue
		}
		for qk, g := range c.groups {
			if qk.row() == rk && len(g.pending) > 0 {
				c.startSolo(rk)
				break
			}
		}
	}
	if c.shared < c.inFlight() {
		for qk, g := range c.groups {
			if len(g.pending) > 0 && !c.solo[qk.row()] {
				c.shared++
				go c.drainShared()
				break
			}
		}
	}
}

// begin starts a transaction: a pipeTx on a pool connection when the
// database hands those out (BEGIN and COMMIT then ride along with other
// statements), an ordinary one otherwise. end rolls back whatever was not
// committed, waiting at most 5 s (members of a failed batch are answered
// after it), and returns the connection.
func (c *Committer) begin(ctx context.Context) (tx pgx.Tx, pipe *pipeTx, end func(), err error) {
	release := func() {}
	if a, ok := c.DB.(acquirer); ok {
		conn, err := a.Acquire(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		pipe = &pipeTx{conn: conn}
		tx, release = pipe, conn.Release
	} else if tx, err = c.DB.Begin(ctx); err != nil {
		return nil, nil, nil, err
	}
	return tx, pipe, func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		tx.Rollback(rctx)
		release()
	}, nil
}

func (c *Committer) inFlight() int {
	if c.InFlight > 0 {
		return c.InFlight
	}
	return 1
}

func (c *Committer) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// single issues one request in its own transaction, in the caller's
// goroutine.
func (c *Committer) single(ctx context.Context, req IssueRequest) Result {
	cl := &call{req: req, done: make(chan struct{})}
	c.alone(ctx, cl, false)
	return cl.res
}

// alone runs cl in a transaction of its own. When another transaction
// recorded the same idempotency key first, it runs once more, which then
// replays that transaction's invoice.
func (c *Committer) alone(ctx context.Context, cl *call, reserved bool) {
	if err := c.run(ctx, [][]*call{{cl}}, c.Options, lostKeyRace, reserved); lostKeyRace(err) {
		c.run(ctx, [][]*call{{cl}}, c.Options, nil, reserved)
	}
}

// flush runs one batch of one series and answers every member; when the
// batch fails for a reason that need not apply to every member, members
// are retried alone.
func (c *Committer) flush(batch []*call, opt series.Options, reserved bool) {
	// The batch belongs to no request: a client that goes away must not
	// abort its neighbours' transaction.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if len(batch) == 1 {
		c.alone(ctx, batch[0], reserved)
		return
	}
	err := c.run(ctx, [][]*call{batch}, opt, retryMembersAlone, reserved)
	if err == nil || !retryMembersAlone(err) {
		return
	}
	c.mu.Lock()
	c.stats.Retries++
	c.mu.Unlock()
	if c.Logger != nil {
		c.Logger.Warn("group commit: batch failed, retrying members one by one", "size", len(batch), "err", err)
	}
	for _, cl := range batch {
		if !cl.answered {
			c.alone(ctx, cl, reserved)
		}
	}
}

// The retry decisions: each says, for the error of a failed transaction,
// whether its caller runs the unanswered members again in smaller
// transactions (run then leaves them unanswered) or not (run answers them
// with the error). A failure whose outcome is unknown is never retried.

// retrySeriesAlone: a shared batch is split into one transaction per
// series.
func retrySeriesAlone(err error) bool { return !errors.Is(err, ErrOutcomeUnknown) }

// retryMembersAlone: a batch of one series is split into its members,
// unless the failure would fail each of them alone too (a lock wait, an
// unavailable database, an unknown outcome) and retrying would only
// multiply the wait.
func retryMembersAlone(err error) bool {
	return apperr.KindOf(err) != apperr.Unavailable && !dbfault.Unavailable(err)
}

// lostKeyRace: a single member runs once more when another transaction
// recorded its idempotency key first; the second run replays that invoice.
func lostKeyRace(err error) bool { return errors.Is(err, ErrKeyRace) }

// run executes one transaction for parts, each the calls of one series and
// date (no two of one series and year). Members whose idempotency key
// replays, is in progress or was reused are answered without a number; a
// part refused on its own (date order, exhausted) is answered with its
// error; the rest are issued together. When the transaction fails, run
// returns the error and answers every unanswered member with it, unless
// retry (the caller's retry decision; nil for none) says the caller runs
// them again. reserved says the rows of parts are reserved in c.taken by
// the batch this transaction belongs to.
func (c *Committer) run(ctx context.Context, parts [][]*call, opt series.Options, retry func(error) bool, reserved bool) (err error) {
	var calls []*call
	for _, p := range parts {
		calls = append(calls, p...)
	}
	defer c.observeRun(time.Now(), calls, &err)
	answer := func(cl *call, r Result) {
		cl.res = r
		cl.answered = true
		close(cl.done)
	}
	defer func() {
		retrying := err != nil && retry != nil && retry(err)
		for _, cl := range calls {
			if !cl.answered && !retrying {
				answer(cl, Result{Err: err})
			}
		}
	}()

	rows, predicted := c.enter(parts, reserved)
	defer c.leave(rows, predicted != nil)
	if predicted != nil {
		if done, err := c.runPredicted(ctx, parts, rows, predicted, opt, answer); done {
			return err
		}
	}

	tx, pipe, end, err := c.begin(ctx)
	if err != nil {
		return translate(err, "begin")
	}
	defer end()

	// Idempotency keys, before the counter locks. Each distinct (seller,
	// key, request) is claimed once. Only the first member with a fresh
	// key is issued; later members with that key are told it is in
	// progress.
	var claims []KeyClaim
	claimOf := map[string]int{}
	memberClaim := map[*call]int{}
	for _, cl := range calls {
		d := cl.req.Draft
		if d.IdempotencyKey == "" {
			continue
		}
		id := keyID(cl.req.Seller.ID, d.IdempotencyKey) + "\x00" + string(d.RequestHash)
		j, ok := claimOf[id]
		if !ok {
			j = len(claims)
			claimOf[id] = j
			claims = append(claims, KeyClaim{SellerID: cl.req.Seller.ID, Key: d.IdempotencyKey, RequestHash: d.RequestHash})
		}
		memberClaim[cl] = j
	}
	replays := map[*call]int64{}
	skip := map[*call]bool{}
	judgedAt := time.Time{} // when the date window is judged: now, unless the database's clock
	if len(claims) > 0 {
		outcomes, dbNow, err := claimKeys(ctx, tx, claims)
		if err != nil {
			return err
		}
		if c.DateClock == DatabaseClock {
			judgedAt = dbNow
		}
		issuing := map[string]bool{}
		for _, cl := range calls {
			j, ok := memberClaim[cl]
			if !ok {
				continue
			}
			o := outcomes[j]
			key := keyID(claims[j].SellerID, claims[j].Key)
			switch {
			case o.Err != nil:
				answer(cl, Result{Err: o.Err})
				skip[cl] = true
			case o.InvoiceID != 0:
				replays[cl] = o.InvoiceID
				skip[cl] = true
			case issuing[key]:
				answer(cl, Result{Err: ErrKeyInProgress})
				skip[cl] = true
			default:
				issuing[key] = true
			}
		}
	}
	// The date window, judged now that the keys are held: a member whose
	// date fell out of it is refused, and nothing else with its key can
	// commit meanwhile.
	if c.DateWindow != nil {
		now := judgedAt
		if now.IsZero() {
			now = c.now()
		}
		for _, cl := range calls {
			if skip[cl] {
				continue
			}
			if err := c.DateWindow.Check(cl.req.Draft.InvoiceDate, now); err != nil {
				answer(cl, Result{Err: err})
				skip[cl] = true
			}
		}
	}
	// The members to issue, per part, in arrival order.
	var groups []Group
	var members [][]*call
	for _, p := range parts {
		var ms []*call
		var drafts []Draft
		for _, cl := range p {
			if !skip[cl] {
				ms = append(ms, cl)
				drafts = append(drafts, cl.req.Draft)
			}
		}
		if len(ms) > 0 {
			groups = append(groups, Group{Seller: p[0].req.Seller, Series: p[0].req.Series, Drafts: drafts})
			members = append(members, ms)
		}
	}
	// Replays read committed rows; do it before the counter locks.
	replayed := map[*call]Invoice{}
	for cl, id := range replays {
		inv, err := Get(ctx, tx, cl.req.Seller.ID, id)
		if err != nil {
			return err
		}
		replayed[cl] = inv
	}
	var invs [][]Invoice
	var groupErrs []error
	var states []*series.State
	committed := false
	if len(groups) > 0 {
		invs, groupErrs, states, committed, err = issueMany(ctx, tx, groups, c.now(), opt, pipe != nil, whatIsLeft)
		if err != nil {
			return err
		}
	}
	if committed {
		pipe.committed()
	} else if err := tx.Commit(ctx); err != nil {
		return commitFailed(err)
	}
	// Stats first: an answered caller may read them at once.
	// A group's first members may be issued and the rest refused (the
	// series had fewer numbers left than members).
	issued := 0
	for g := range members {
		issued += len(invs[g])
	}
	c.recordCommit(members, states, issued, false)
	for g, ms := range members {
		for i, cl := range ms {
			if i >= len(invs[g]) {
				answer(cl, Result{Err: groupErrs[g]})
				continue
			}
			answer(cl, Result{Invoice: invs[g][i]})
		}
	}
	for cl, inv := range replayed {
		answer(cl, Result{Invoice: inv, Replayed: true})
	}
	return nil
}

// statementFailed reports whether err is a statement's error from the
// database other than a lock timeout, which the shared batch answers by
// splitting itself (flushShared), not by retrying in place.
func statementFailed(err error) bool {
	c := db.Classify(err)
	return db.SQLState(err) != "" && c != db.LockTimeout && c != db.Unavailable && c != db.OutcomeUnknown
}

// predicts reports whether the Committer predicts counter rows at all:
// Predict is on, requests are batched, and the database hands out pool
// connections (otherwise BEGIN cannot ride along and no round trip is
// saved).
func (c *Committer) predicts() bool {
	if !c.Predict || !c.Batching {
		return false
	}
	_, ok := c.DB.(acquirer)
	return ok
}

func rowOf(r IssueRequest) rowKey { return groupKey{r.Series.ID, r.Draft.InvoiceDate}.row() }

// enter registers a transaction on the counter rows of parts and returns
// them, with the states to predict them from when every row can be
// predicted (Predict on, a remembered state, no other transaction of this
// Committer on the row nor another shared batch that selected it, no
// recent failed prediction, no idempotency key twice in the batch), nil
// otherwise. reserved is run's: whether this transaction's own shared
// batch counts in c.taken.
func (c *Committer) enter(parts [][]*call, reserved bool) ([]rowKey, []series.State) {
	if !c.predicts() {
		return nil, nil // nothing to track
	}
	rows := make([]rowKey, len(parts))
	for i, p := range parts {
		rows[i] = rowOf(p[0].req)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flying == nil {
		c.flying = map[rowKey]int{}
	}
	predicted := make([]series.State, len(rows))
	now := time.Now()
	own := 0 // this transaction's own selection of the row
	if reserved {
		own = 1
	}
	for i, rk := range rows {
		st, ok := c.states[rk]
		if !ok || c.flying[rk] > 0 || c.taken[rk] > own || now.Before(c.unstable[rk]) {
			predicted = nil
			break
		}
		predicted[i] = st
	}
	if predicted != nil {
		seen := map[string]bool{}
		for _, p := range parts {
			for _, cl := range p {
				if k := cl.req.Draft.IdempotencyKey; k != "" {
					id := keyID(cl.req.Seller.ID, k)
					if seen[id] {
						predicted = nil
					}
					seen[id] = true
				}
			}
		}
	}
	for _, rk := range rows {
		c.flying[rk]++
	}
	if predicted != nil {
		if c.predicting == nil {
			c.predicting = map[rowKey]bool{}
		}
		for _, rk := range rows {
			c.predicting[rk] = true
		}
	}
	return rows, predicted
}

// leave ends what enter began; predicted is whether enter returned states
// (only that transaction clears the rows' predicting mark: another one on
// the same rows may end first).
func (c *Committer) leave(rows []rowKey, predicted bool) {
	if len(rows) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rk := range rows {
		if c.flying[rk]--; c.flying[rk] <= 0 {
			delete(c.flying, rk)
		}
		if predicted {
			delete(c.predicting, rk)
		}
	}
}

// recordCommit records a committed transaction: in the stats, the n
// invoices it issued; for Predict, the state it left the counter row of
// each of parts in (states, parallel; nil: unknown, forget it).
// An older state than the one remembered (two transactions finishing out
// of order) is ignored. It takes c.mu once for the whole batch, which is
// on the critical path of the next one.
func (c *Committer) recordCommit(parts [][]*call, states []*series.State, n int, predicted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Batches++
	c.stats.Invoices += int64(n)
	if predicted {
		c.stats.Predicted++
	}
	if !c.predicts() {
		return
	}
	for i, p := range parts {
		rk, st := rowOf(p[0].req), states[i]
		if st == nil {
			delete(c.states, rk)
			continue
		}
		if c.states == nil {
			c.states = map[rowKey]series.State{}
		}
		if old, ok := c.states[rk]; ok && (old.LastSerial > st.LastSerial || old.ChainLength > st.ChainLength) {
			continue
		}
		c.states[rk] = *st
	}
}

// forget drops the remembered states of rows and, with a non-zero until,
// does not predict them before then.
func (c *Committer) forget(rows []rowKey, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !until.IsZero() && c.unstable == nil {
		c.unstable = map[rowKey]time.Time{}
	}
	now := time.Now()
	for rk, t := range c.unstable {
		if !now.Before(t) {
			delete(c.unstable, rk) // expired: prune while adding
		}
	}
	for _, rk := range rows {
		delete(c.states, rk)
		if !until.IsZero() {
			c.unstable[rk] = until
		}
	}
}

// runPredicted issues parts in one round trip from the predicted states of
// their counter rows (see Predict). done is false when the prediction
// failed and nothing was taken: the caller issues parts the ordinary way.
// Otherwise every member is answered, or err is the transaction's failure
// for run to handle.
func (c *Committer) runPredicted(ctx context.Context, parts [][]*call, rows []rowKey, predicted []series.State, opt series.Options, answer func(*call, Result)) (done bool, err error) {
	tx, pipe, end, err := c.begin(ctx)
	if err != nil {
		return true, translate(err, "begin")
	}
	defer end()
	if pipe == nil {
		return false, nil // enter predicts only on a pool, where there is a pipe
	}
	now := c.now()
	groups := make([]Group, len(parts))
	var claims []KeyClaim
	var window *dateWindow // the dates, for the database to judge
	for g, p := range parts {
		groups[g] = Group{Seller: p[0].req.Seller, Series: p[0].req.Series, Drafts: make([]Draft, len(p))}
		for i, cl := range p {
			d := cl.req.Draft
			groups[g].Drafts[i] = d
			if d.IdempotencyKey != "" {
				claims = append(claims, KeyClaim{SellerID: cl.req.Seller.ID, Key: d.IdempotencyKey, RequestHash: d.RequestHash})
			}
			if window == nil {
				window = &dateWindow{First: d.InvoiceDate, Last: d.InvoiceDate}
			}
			window.First, window.Last = minTime(window.First, d.InvoiceDate), maxTime(window.Last, d.InvoiceDate)
		}
	}
	switch {
	case c.DateWindow == nil:
		window = nil
	case c.DateClock == DatabaseClock && len(claims) > 0:
		// Judged by the database's clock, after the keys' locks; when it
		// fails, the ordinary path words the refusal.
		window.BackdateDays = c.DateWindow.BackdateDays
	default:
		window = nil
		for _, p := range parts {
			for _, cl := range p {
				if c.DateWindow.Check(cl.req.Draft.InvoiceDate, now) != nil {
					// Only the ordinary path refuses, after the key's
					// replay and progress are known.
					return false, nil
				}
			}
		}
	}
	invs, states, err := issuePredicted(ctx, tx, groups, predicted, claims, window, now, opt)
	switch {
	case errors.Is(err, errPredictRefused):
		return false, nil // only the ordinary path words the refusal
	case mispredicted(err), statementFailed(err):
		// Nothing was taken: the ordinary path issues the batch and
		// answers what failed as it would have without prediction. A key
		// already used or held leaves the rows as remembered; a row that
		// moved, or any other failed statement (a schema without migration
		// 00002, a deadlock, a constraint), is forgotten and not predicted
		// for a while.
		c.mu.Lock()
		c.stats.Mispredicted++
		c.mu.Unlock()
		c.observeMispredicted()
		if moved := series.IsMoved(err); moved || !mispredicted(err) {
			c.forget(rows, time.Now().Add(unstableFor))
			if !moved && c.Logger != nil {
				c.Logger.Warn("group commit: predicted transaction failed, issuing it the ordinary way", "err", err)
			}
		}
		return false, nil
	case err != nil:
		c.forget(rows, time.Time{})
		return true, err
	}
	pipe.committed()
	// Stats first: an answered caller may read them at once.
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	c.recordCommit(parts, states, n, true)
	for g, p := range parts {
		for i, cl := range p {
			answer(cl, Result{Invoice: invs[g][i]})
		}
	}
	return true, nil
}
