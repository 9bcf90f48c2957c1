package invoice

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/groupcommit"
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
// Which requests a batch takes is the scheduler's (package
// internal/groupcommit): requests are queued per (series, invoice date), a
// batch takes the queues of many series, one date per series and year, and
// a counter row is held by one batch at a time. If a batch's counter locks
// are not had quickly (another process or a library user holds one), the
// batch is split: each series is retried in a transaction of its own with
// the full lock timeout, and the series of that batch are batched alone
// for a few seconds, so a stuck series never holds the others up.
//
// A batch that fails does not fail its neighbours: members are validated
// before they join (document.Prepare); a series refused on its own (date out of
// order, exhausted) fails only its members; and when the transaction fails
// for a reason that is not common to all members, each member is retried
// alone (retryRules). A rolled-back batch returns all its numbers. Several
// processes on one database stay correct: the counter row locks still
// serialise them.
type Committer struct {
	db   db.Beginner
	pool Pool // set for pipelined transactions
	st   strategy
	cfg  Config
	// queue is the scheduler.
	queue *groupcommit.Scheduler[*call]

	mu    sync.Mutex
	stats Stats
	// rows holds, when predicting, what this Committer knows of each
	// counter row it predicts (rowState).
	rows map[rowKey]*rowState
	// shards maps a seller's id to its shard group (strategy.shardGroups).
	shards sync.Map
	// subscribers holds, when delegating, the sellers a call found
	// subscribed to invoice.issued: their batches take event ids first.
	subscribers sync.Map
}

// Pool hands out the connections of pipelined transactions;
// *pgxpool.Pool satisfies it.
type Pool interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// NewCommitter returns a Committer whose transactions run on connections
// of pool, pipelined: BEGIN and COMMIT ride along with other statements,
// and a batch's counter rows are predicted (see strategy). It fails when
// pool is nil or a field of cfg is invalid; the error says which.
func NewCommitter(pool Pool, cfg Config) (*Committer, error) {
	if pool == nil {
		return nil, errors.New("invoice: NewCommitter needs a pool")
	}
	return newCommitter(nil, pool, cfg)
}

// NewPlainCommitter returns a Committer whose transactions are db's own
// (db.Begin), one round trip per statement, as a library user with a
// single connection has them: batched, not predicted. It fails when db is
// nil or a field of cfg is invalid.
func NewPlainCommitter(db db.Beginner, cfg Config) (*Committer, error) {
	if db == nil {
		return nil, errors.New("invoice: NewPlainCommitter needs a database")
	}
	return newCommitter(db, nil, cfg)
}

// newCommitter returns a Committer on db or pool (one is nil) with the
// strategy for cfg (strategyFor), or the error of cfg.check.
func newCommitter(db db.Beginner, pool Pool, cfg Config) (*Committer, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	st := strategyFor(pool != nil, cfg)
	// On Citus the ordinary transaction's writes take the routed form
	// (series.Options.Routed), events a round trip of their own.
	cfg.Options.Routed = cfg.Options.Routed || cfg.Citus
	c := &Committer{db: db, pool: pool, st: st, cfg: cfg, rows: map[rowKey]*rowState{}}
	gc := groupcommit.Config{MaxBatch: cfg.MaxBatch, InFlight: cfg.InFlight, SoloFor: soloFor, OneOwner: st.oneOwner}
	if st.shardGroups {
		gc.Group = c.shardGroup
	}
	q, err := groupcommit.New[*call](gc, batches{c})
	if err != nil {
		return nil, err
	}
	c.queue = q
	return c, nil
}

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
	// Delegated counts the predicted transactions that were one call of
	// invoiced_issue_rows_v2 (on Citus).
	Delegated int64
}

// Stats returns a snapshot of the counters.
func (c *Committer) Stats() Stats {
	c.mu.Lock()
	st := c.stats
	c.mu.Unlock()
	if c.st.delegated {
		st.Delegated = st.Predicted // a predicted batch is a delegated call then
	}
	st.MaxBatch = c.queue.Largest()
	return st
}

// pending returns how many requests wait in c's queues.
func (c *Committer) pending() int {
	return c.queue.Pending()
}

// rowKey names a counter row: a series and financial year, and the seller
// (groupcommit's owner, for strategy.oneOwner).
type rowKey = groupcommit.Row

// queueOf returns the queue of r: its series and invoice date, in the
// counter row of the date's financial year.
func queueOf(r IssueRequest) groupcommit.Key {
	d := r.Draft.InvoiceDate
	return groupcommit.Key{Row: rowKey{Series: r.Series.ID, Year: int(gst.FYOf(d)), Owner: r.Seller.ID}, Date: d}
}

// rowOf returns the counter row that numbers r.
func rowOf(r IssueRequest) rowKey { return queueOf(r).Row }

// IssueRequest is one invoice to issue.
type IssueRequest struct {
	Seller gst.Seller
	Series gst.Series
	Draft  document.Draft
}

// Result is the outcome of one request: the invoice, whether it is a replay
// of an earlier request with the same Idempotency-Key, or an error.
type Result struct {
	Invoice  document.Invoice
	Replayed bool
	Err      error
}

// call is one request on its way through the Committer.
type call struct {
	req      IssueRequest
	res      Result
	answered bool
	done     chan struct{}
}

// answer gives cl its result and wakes its caller. A call is answered
// once: a second answer is a bug.
func (cl *call) answer(r Result) {
	if cl.answered {
		panic("invoice: a request answered twice")
	}
	cl.res = r
	cl.answered = true
	close(cl.done)
}

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
	c.learnShard(ctx, req.Seller.ID)
	cl := &call{req: req, done: make(chan struct{})}
	k := queueOf(req)
	c.queue.Enqueue([]groupcommit.Key{k}, []*call{cl})
	select {
	case <-cl.done:
		return cl.res
	case <-ctx.Done():
		return c.abandon(ctx, k, cl)
	}
}

// IssueBatch issues reqs, all of one seller and series, and returns one
// Result per request, in order, each as Issue would answer it alone
// (replay, key in progress, key reused, date window, exhausted, the
// outcome unknown). The requests of one invoice date
// join their queue together and are taken by one transaction: they get
// consecutive serials in the order of reqs, under one hold of the counter
// row, unless that transaction fails and its members are retried one by
// one (in the same order). Requests of several dates are numbered date by
// date, oldest first (a series numbers its dates in order).
//
// If ctx ends, requests still queued leave their queue and get ctx.Err();
// those a transaction took get ErrOutcomeUnknown (see Issue).
func (c *Committer) IssueBatch(ctx context.Context, reqs []IssueRequest) []Result {
	out := make([]Result, len(reqs))
	calls := make([]*call, len(reqs))
	keys := make([]groupcommit.Key, len(reqs))
	if len(reqs) > 0 {
		c.learnShard(ctx, reqs[0].Seller.ID)
	}
	for i, r := range reqs {
		calls[i], keys[i] = &call{req: r, done: make(chan struct{})}, queueOf(r)
	}
	c.queue.Enqueue(keys, calls)
	for i, cl := range calls {
		select {
		case <-cl.done:
			out[i] = cl.res
		case <-ctx.Done():
			out[i] = c.abandon(ctx, keys[i], cl)
		}
	}
	return out
}

// errGaveUp is ErrOutcomeUnknown for a caller whose deadline passed while
// a transaction held its request.
var errGaveUp = apperr.Errorf(ErrOutcomeUnknown, "the request's deadline passed while its transaction was running, which may still issue the invoice; retry with the same Idempotency-Key to learn the outcome")

// abandon answers a caller whose ctx ended before cl was answered: cl's
// result if it was answered meanwhile; ctx.Err() when cl still waited in
// queue k (it leaves it: nothing will issue it); errGaveUp when a batch
// took it.
func (c *Committer) abandon(ctx context.Context, k groupcommit.Key, cl *call) Result {
	select {
	case <-cl.done:
		return cl.res
	default:
	}
	if !c.queue.Withdraw(k, cl) {
		return Result{Err: errGaveUp}
	}
	return Result{Err: ctx.Err()}
}

func (c *Committer) now() time.Time { return c.cfg.Now() }
