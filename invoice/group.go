package invoice

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/series"
)

// Committer issues invoices, gathering concurrent requests for the same
// series and invoice date into one transaction (group commit): one counter
// update takes k consecutive numbers, the k invoices are inserted together,
// the chain advances once, and one COMMIT makes them all durable. Nobody
// waits for a timer: while one batch commits, new arrivals queue, and the
// next batch takes all of them, so at low load a batch is a single invoice
// and at high load the lock's hold time is shared by many.
//
// A batch that fails does not fail its neighbours: members are validated
// before they join (Prepare), and when the batch's transaction fails for a
// reason that is not common to all members, each member is retried alone.
// A rolled-back batch returns all its numbers. Several processes on one
// database stay correct: the counter row lock still serialises them.
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

	mu     sync.Mutex
	groups map[groupKey]*group
	stats  Stats
}

// Stats counts what a Committer has done.
type Stats struct {
	Batches  int64 // transactions committed or attempted
	Invoices int64 // invoices committed
	Retries  int64 // batches split into single-member retries
	MaxBatch int   // largest batch seen
}

type groupKey struct {
	seriesID int64
	date     time.Time
}

type group struct {
	pending []*call
	running bool
}

// Request is one invoice to issue.
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
}

// Issue issues one invoice and returns its result. With an idempotency key
// on the draft, a key that already answered an identical request returns
// that invoice with Replayed set; a key held by a request still running
// returns ErrKeyInProgress; a key used for another request ErrKeyReused.
// Other errors are those of IssueTx. If ctx ends first, Issue returns
// ctx.Err() while the invoice may still be committed: a retry with the same
// idempotency key finds out.
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
	if !g.running {
		g.running = true
		go c.drain(k, g)
	}
	c.mu.Unlock()
	select {
	case <-cl.done:
		return cl.res
	case <-ctx.Done():
		return Result{Err: ctx.Err()}
	}
}

// Stats returns a snapshot of the counters.
func (c *Committer) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// drain runs batches for one group until its queue is empty.
func (c *Committer) drain(k groupKey, g *group) {
	maxBatch := c.MaxBatch
	if maxBatch <= 0 {
		maxBatch = 512
	}
	for {
		c.mu.Lock()
		n := min(len(g.pending), maxBatch)
		if n == 0 {
			g.running = false
			delete(c.groups, k)
			c.mu.Unlock()
			return
		}
		batch := g.pending[:n:n]
		g.pending = g.pending[n:]
		if n > c.stats.MaxBatch {
			c.stats.MaxBatch = n
		}
		c.mu.Unlock()
		c.flush(batch)
	}
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
	c.alone(ctx, cl)
	return cl.res
}

// alone runs cl in a transaction of its own. When another transaction
// recorded the same idempotency key first, it runs once more, which then
// replays that transaction's invoice.
func (c *Committer) alone(ctx context.Context, cl *call) {
	if err := c.run(ctx, []*call{cl}, true); errors.Is(err, ErrKeyRace) {
		c.run(ctx, []*call{cl}, false)
	}
}

// flush runs one batch and answers every member; when the batch fails for a
// reason that need not apply to every member, members are retried alone.
func (c *Committer) flush(batch []*call) {
	// The batch belongs to no request: a client that goes away must not
	// abort its neighbours' transaction.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if len(batch) == 1 {
		c.alone(ctx, batch[0])
		return
	}
	err := c.run(ctx, batch, true)
	if err == nil || commonFailure(err) {
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
			c.alone(ctx, cl)
		}
	}
}

// commonFailure reports whether err would fail every member of a batch
// alone too, so retrying them one by one would only multiply the wait.
func commonFailure(err error) bool {
	return errors.Is(err, series.ErrLockTimeout) || errors.Is(err, series.ErrDateOutOfOrder) ||
		apperr.KindOf(err) == apperr.Unavailable || errors.Is(err, context.DeadlineExceeded)
}

// run executes one transaction for the calls. Members whose idempotency key
// replays, is in progress or was reused are answered without a number; the
// rest are issued together. When the transaction fails, run answers every
// unanswered member with the error, unless mayRetry is set and the caller
// will retry them (several members and a failure not common to all, or one
// member that lost an idempotency-key race), and returns the error.
func (c *Committer) run(ctx context.Context, calls []*call, mayRetry bool) (err error) {
	answer := func(i int, r Result) {
		calls[i].res = r
		calls[i].answered = true
		close(calls[i].done)
	}
	defer func() {
		retrying := mayRetry && err != nil &&
			(len(calls) > 1 && !commonFailure(err) || len(calls) == 1 && errors.Is(err, ErrKeyRace))
		for i := range calls {
			if !calls[i].answered && !retrying {
				answer(i, Result{Err: err})
			}
		}
	}()

	req0 := calls[0].req
	tx, err := c.DB.Begin(ctx)
	if err != nil {
		return translate(err, "begin")
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	// Idempotency keys, before the counter lock. Each distinct (key,
	// request) is claimed once. Only the first member with a fresh key is
	// issued; later members with that key are told it is in progress.
	var claims []KeyClaim
	claimOf := map[string]int{} // key + request hash -> index into claims
	memberClaim := make([]int, len(calls))
	var fresh []int
	for i, cl := range calls {
		d := cl.req.Draft
		memberClaim[i] = -1
		if d.IdempotencyKey == "" {
			fresh = append(fresh, i)
			continue
		}
		id := d.IdempotencyKey + "\x00" + string(d.RequestHash)
		j, ok := claimOf[id]
		if !ok {
			j = len(claims)
			claimOf[id] = j
			claims = append(claims, KeyClaim{Key: d.IdempotencyKey, RequestHash: d.RequestHash})
		}
		memberClaim[i] = j
	}
	replays := map[int]int64{}
	if len(claims) > 0 {
		outcomes, err := ClaimKeys(ctx, tx, req0.Seller.ID, claims)
		if err != nil {
			return err
		}
		issuing := map[string]bool{}
		for i, j := range memberClaim {
			if j < 0 {
				continue
			}
			o, key := outcomes[j], claims[j].Key
			switch {
			case o.Err != nil:
				answer(i, Result{Err: o.Err})
			case o.InvoiceID != 0:
				replays[i] = o.InvoiceID
			case issuing[key]:
				answer(i, Result{Err: ErrKeyInProgress})
			default:
				issuing[key] = true
				fresh = append(fresh, i)
			}
		}
	}
	var invs []Invoice
	if len(fresh) > 0 {
		// Serial order follows arrival order.
		slices.Sort(fresh)
		drafts := make([]Draft, len(fresh))
		for j, i := range fresh {
			drafts[j] = calls[i].req.Draft
		}
		invs, err = IssueTx(ctx, tx, req0.Seller, req0.Series, drafts, c.now(), c.Options)
		if err != nil {
			return err
		}
	}
	replayed := map[int]Invoice{}
	for i, id := range replays {
		inv, err := Get(ctx, tx, req0.Seller.ID, id)
		if err != nil {
			return err
		}
		replayed[i] = inv
	}
	if err := tx.Commit(ctx); err != nil {
		return translate(err, "commit")
	}
	c.mu.Lock()
	c.stats.Batches++
	c.stats.Invoices += int64(len(invs))
	c.mu.Unlock()
	for j, i := range fresh {
		answer(i, Result{Invoice: invs[j]})
	}
	for i, inv := range replayed {
		answer(i, Result{Invoice: inv, Replayed: true})
	}
	return nil
}
