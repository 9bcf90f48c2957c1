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
	// Observer, when set, is told about each transaction (metrics).
	Observer Observer
	// Citus says the database is a Citus coordinator, distributed by
	// seller (docs/scale-out.md); the pool's sessions need custom plans
	// (db.ForCitus). It picks the Citus strategy (see strategy).
	Citus bool
	// CitusBatch, on Citus, is what one transaction may hold: the sellers
	// of one shard (PerShard, the default) or one seller (PerSeller).
	// Both keep each transaction on one worker.
	CitusBatch CitusBatch
}

// CitusBatch names what one transaction may hold on Citus.
type CitusBatch int

const (
	// PerShard takes the queues of every seller whose rows live in one shard
	// (a shard holds a hash range of sellers; a transaction over sellers
	// of one shard is still routed to one worker). Each seller's shard is
	// read from the Citus metadata once per process (shardbatch.go).
	PerShard CitusBatch = iota
	// PerSeller takes the queues of one seller only (its oldest queue's).
	PerSeller
)

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

// strategy is how a Committer issues, chosen once by newCommitter from
// what the database is (Config.Citus) and how it is reached (a pool, or
// one connection), by the policy measured best (docs/bench.md,
// docs/scale-out.md). Every strategy gathers concurrent requests into
// shared transactions (group commit); the classic design, one
// transaction per invoice, is IssueTx in a transaction of the caller's.
//
//	PostgreSQL, a pool (NewCommitter): pipelined transactions, predicted
//	PostgreSQL, one connection (NewPlainCommitter): plain transactions
//	Citus, a pool: one seller's or shard's series per transaction,
//	  routed writes, a predicted batch as one delegated call
type strategy struct {
	// pipelined: transactions run on a pool connection, BEGIN and
	// COMMIT riding along with other statements (pipeTx); otherwise
	// they are the database's own (db.Beginner.Begin), one round trip
	// per statement.
	pipelined bool
	// predict: a batch whose counter rows this Committer wrote last takes
	// its numbers from the state it remembers, so claims, counter update,
	// inserts and COMMIT go in one round trip instead of three, and the
	// database checks the prediction under the row locks. A batch whose
	// prediction fails took nothing and is issued the ordinary way; its
	// series are not predicted for a few seconds. Pipelined only.
	predict bool
	// delegated (Citus): a predicted batch is one call of the database
	// function invoiced_issue_rows_v2 (migrations 00029, 00041), which
	// Citus delegates to the worker of the batch's shard and runs there
	// whole: one coordinator hop per batch instead of one per statement
	// (docs/scale-out.md, "One call per batch"). A batch that needs the
	// period guard (dated in a month that may have ended) is issued the
	// ordinary way.
	delegated bool
	// oneOwner (Citus): a batch takes the series of one seller (or of
	// the sellers of one shard, shardGroups) only, so each transaction
	// runs on one worker with no two-phase commit. It costs transactions,
	// so plain PostgreSQL mixes sellers.
	oneOwner    bool
	shardGroups bool
	// plans is the plan_cache_mode a pipelined transaction sets after
	// BEGIN (pipeTx.plans): generic plans, custom ones on Citus.
	plans string
}

// strategyFor returns the strategy of a Committer for cfg, whose
// transactions are pipelined on a pool when pooled is set.
func strategyFor(pooled bool, cfg Config) strategy {
	st := strategy{pipelined: pooled, predict: pooled, plans: genericPlans}
	if cfg.Citus {
		st.delegated = st.predict
		st.oneOwner = true
		st.shardGroups = cfg.CitusBatch == PerShard
		st.plans = customPlans
	}
	return st
}

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

// check returns what is wrong with cfg, nil when nothing is.
func (cfg Config) check() error {
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
	if cfg.CitusBatch != PerShard && cfg.CitusBatch != PerSeller {
		errs = append(errs, fmt.Errorf("invoice: Config.CitusBatch %d is neither PerShard nor PerSeller", cfg.CitusBatch))
	}
	return errors.Join(errs...)
}
