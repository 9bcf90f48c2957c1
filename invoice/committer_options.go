package invoice

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/groupcommit"
	"github.com/invoiced/invoiced/series"
)

// Config tunes a Committer. The zero value of a field means its default.
type Config struct {
	// Options are the counter's (lock timeout, lock wait observer).
	Options series.Options
	// Batching off issues each invoice in its own transaction in the
	// caller's goroutine: the classic design, kept for comparison.
	Batching bool
	// MaxBatch caps the invoices per transaction (default 512).
	MaxBatch int
	// Logger, when set, is told about batches that fail and are retried.
	Logger *slog.Logger
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
	// progress, or replays it. Nil: the caller judged the dates (document.Prepare).
	DateWindow *document.Policy
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
	// ordinary way; its series are not predicted for a few seconds. It
	// needs pipelined transactions (NewCommitter) and Batching.
	Predict bool
	// Observer, when set, is told about each transaction (metrics).
	Observer Observer
	// Citus makes every transaction belong to one seller, for a database
	// distributed by seller (docs/scale-out.md): a shared batch takes the
	// series of one seller only (its oldest queue's), so each transaction
	// runs on one worker with no two-phase commit. It costs transactions
	// (a batch no longer mixes sellers), so plain PostgreSQL leaves it
	// off. The pool's sessions need custom plans (db.ForCitus). It also
	// turns Options.Routed on: the writes of an ordinary transaction are
	// multi-row VALUES, which Citus routes to one worker, where an insert
	// from unnest would be copied in two phases (docs/scale-out.md); and
	// Delegated on when Predict is.
	Citus bool
	// Delegated sends a predicted batch as one call of the database
	// function invoiced_issue_rows_v2 (migrations 00029, 00041) instead of a
	// pipelined transaction: on Citus the call is delegated to the worker
	// of the batch's shard and runs there whole, one coordinator hop per
	// batch instead of one per statement (docs/scale-out.md, "One call per
	// batch"). A batch that needs the period guard (dated in a month that
	// may have ended) is issued the ordinary way. It needs Predict; Citus
	// sets it. On plain PostgreSQL it is for tests and measurement.
	Delegated bool
	// ShardBatches, with Citus, lets a batch take the queues of every
	// seller whose rows live in one shard, not of one seller only: one
	// shard holds a hash range of sellers, and a transaction over sellers
	// of one shard is still routed to one worker. Each seller's shard is
	// read from the Citus metadata once per process (shardbatch.go).
	ShardBatches bool
}

// DateClock names the clock a Committer judges DateWindow by.
type DateClock int

const (
	// ProcessClock judges by Config.Now.
	ProcessClock DateClock = iota
	// DatabaseClock judges by the database server's clock, read in the
	// transaction after its idempotency keys are locked: every process on
	// one database agrees on "today", and an attempt with a key that got
	// the key's lock after another attempt released it is judged by a
	// clock that is not behind the other's. A transaction without keys,
	// which no retry can be matched with, is judged by Now.
	DatabaseClock
)

// transactions names how a Committer sends its transactions.
type transactions int

const (
	// pipelined transactions run on a pool connection: BEGIN and COMMIT
	// ride along with other statements (pipeTx), and prediction is
	// possible.
	pipelined transactions = iota + 1
	// plain transactions are the database's own (db.Beginner.Begin).
	plain
)

// soloFor is how long the series of a batch that could not get its locks
// quickly are batched alone; sharedLockWait is how long a shared batch
// waits for its locks before it is split; unstableFor is how long a counter
// row whose prediction failed is not predicted; batchTimeout bounds one
// batch's transactions, which belong to no request.
const (
	soloFor        = 5 * time.Second
	sharedLockWait = 250 * time.Millisecond
	unstableFor    = 5 * time.Second
	batchTimeout   = 60 * time.Second
)

// check returns what is wrong with cfg for transactions sent as tx, nil
// when nothing is.
func (cfg Config) check(tx transactions) error {
	var errs []error
	if cfg.MaxBatch < 0 {
		errs = append(errs, fmt.Errorf("invoice: Config.MaxBatch %d is negative (0 means %d)", cfg.MaxBatch, groupcommit.DefaultMaxBatch))
	}
	if cfg.InFlight < 0 {
		errs = append(errs, fmt.Errorf("invoice: Config.InFlight %d is negative (0 means %d)", cfg.InFlight, groupcommit.DefaultInFlight))
	}
	if cfg.DateClock != ProcessClock && cfg.DateClock != DatabaseClock {
		errs = append(errs, fmt.Errorf("invoice: Config.DateClock %d is neither ProcessClock nor DatabaseClock", cfg.DateClock))
	}
	if cfg.Predict && tx != pipelined {
		errs = append(errs, errors.New("invoice: Config.Predict needs pipelined transactions (NewCommitter with a pool), not NewPlainCommitter"))
	}
	if cfg.Delegated && !cfg.Predict {
		errs = append(errs, errors.New("invoice: Config.Delegated needs Config.Predict: only a predicted batch is one call"))
	}
	if cfg.Predict && !cfg.Batching {
		errs = append(errs, errors.New("invoice: Config.Predict needs Config.Batching: only a batch's reserved counter rows can be predicted"))
	}
	return errors.Join(errs...)
}
