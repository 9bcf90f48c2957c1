package invoice

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/groupcommit"
	"github.com/invoiced/invoiced/series"
)

// scope names what a failed transaction held, which says how it is split
// when it is retried.
type scope int

const (
	// shared: the members of several series; retried as one transaction
	// per series.
	shared scope = iota
	// oneSeries: several members of one series; retried as one
	// transaction per member.
	oneSeries
	// oneMember: one member; retried once as it is.
	oneMember
	// memberAgain: one member's second transaction; never retried.
	memberAgain
	scopes
)

// failure is the class of a failed transaction's error that the retry rule
// reads (failureOf).
type failure int

const (
	failedStatement failure = iota // none of the others: a statement, a constraint (db.None, db.Constraint)
	lockTimeout                    // a counter lock was not had in time
	rowMoved                       // a counter row moved on under a prediction
	unavailable                    // the database was not reachable or did not answer
	outcomeUnknown                 // COMMIT was sent and its answer lost
	keyRace                        // another transaction recorded an idempotency key first
)

// retryRules says, for each failure class and scope, whether the members
// left unanswered are retried in smaller transactions (true) or answered
// with the error (false). A failure whose outcome is unknown is never
// retried; one that would fail each member alone too (a lock wait, a moved
// row, an unavailable database) is not retried member by member, which
// would only multiply the wait; a lost key race is retried once, which
// then replays the other transaction's invoice.
var retryRules = [...][scopes]bool{
	//                  shared oneSeries oneMember memberAgain
	failedStatement: {true, true, false, false},
	lockTimeout:     {true, false, false, false},
	rowMoved:        {true, false, false, false},
	unavailable:     {true, false, false, false},
	outcomeUnknown:  {false, false, false, false},
	keyRace:         {true, true, true, false},
}

// retried reports whether the members of a transaction of scope s that
// failed with err are retried: the one place retryRules is read.
func retried(s scope, err error) bool { return err != nil && retryRules[failureOf(err)][s] }

// failureOf returns the failure class of err, a failed transaction's
// error: a lost idempotency-key race, or the database's class of it
// (db.Classify).
func failureOf(err error) failure {
	if errors.Is(err, ErrKeyRace) {
		return keyRace
	}
	switch db.Classify(err) {
	case db.OutcomeUnknown:
		return outcomeUnknown
	case db.LockTimeout:
		return lockTimeout
	case db.RowMoved:
		return rowMoved
	case db.Unavailable:
		return unavailable
	}
	return failedStatement
}

// statementFailed reports whether err is the database's answer to a
// statement (a *pgconn.PgError) that neither is a lock wait nor ended the
// session: a predicted transaction that fails with it took nothing and is
// issued the ordinary way, while a lock wait is answered by splitting the
// shared batch, not by retrying in place.
func statementFailed(err error) bool {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		return false
	}
	switch db.Classify(err) {
	case db.LockTimeout, db.Unavailable, db.OutcomeUnknown:
		return false
	}
	return true
}

// attempt runs one transaction of scope s for parts (commitTx). When the
// transaction fails and its members are retried (retried), it returns the
// error: the members it left unanswered are the caller's to run again.
// Otherwise it returns nil, every member answered: committed, or with the
// transaction's error.
func (c *Committer) attempt(ctx context.Context, s scope, parts [][]*call, opt series.Options) error {
	err := c.commitTx(ctx, parts, opt)
	if err == nil {
		return nil
	}
	if retried(s, err) {
		return err
	}
	for _, p := range parts {
		for _, cl := range p {
			if !cl.answered {
				cl.answer(Result{Err: err})
			}
		}
	}
	return nil
}

// batches is what c's scheduler commits through
// (groupcommit.Committer): the rows of every batch it hands over are
// reserved for it.
type batches struct{ c *Committer }

var _ groupcommit.Committer[*call] = batches{}

// CommitShared commits one shared batch, waiting at most sharedLockWait
// for its counter locks. When it fails as a whole and the rule says so,
// it hands each series' unanswered members back to be retried in a
// transaction of its own with the full lock timeout; after a lock wait
// those series are batched alone for a while.
func (b batches) CommitShared(parts [][]*call, keys []groupcommit.Key) groupcommit.Split[*call] {
	c := b.c
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	opt := c.cfg.Options
	if opt.LockTimeout <= 0 || opt.LockTimeout > sharedLockWait {
		opt.LockTimeout = sharedLockWait
	} else if len(parts) == 1 {
		// The short wait is the series' own: nothing to split off.
		c.commitSeries(parts[0], opt)
		return groupcommit.Split[*call]{}
	}
	err := c.attempt(ctx, shared, parts, opt)
	if err == nil {
		return groupcommit.Split[*call]{}
	}
	c.mu.Lock()
	c.stats.Retries++
	c.mu.Unlock()
	if c.cfg.Logger != nil {
		c.cfg.Logger.Warn("group commit: shared batch failed, retrying each series alone", "series", len(parts), "err", err)
	}
	split := groupcommit.Split[*call]{Retry: make([][]*call, len(parts)), Isolate: failureOf(err) == lockTimeout}
	for i, part := range parts {
		for _, cl := range part {
			if !cl.answered {
				split.Retry[i] = append(split.Retry[i], cl)
			}
		}
	}
	return split
}

// CommitQueue commits the members of one queue with the Committer's own
// lock timeout (commitSeries).
func (b batches) CommitQueue(items []*call) { b.c.commitSeries(items, b.c.cfg.Options) }

// commitSeries commits members, all of one series and date, whose row the
// scheduler reserved, and answers every one; when the transaction fails
// and the rule says so, members are retried alone.
func (c *Committer) commitSeries(members []*call, opt series.Options) {
	// The batch belongs to no request: a client that goes away must not
	// abort its neighbours' transaction.
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	if len(members) == 1 {
		c.commitMember(ctx, members[0])
		return
	}
	err := c.attempt(ctx, oneSeries, [][]*call{members}, opt)
	if err == nil {
		return
	}
	c.mu.Lock()
	c.stats.Retries++
	c.mu.Unlock()
	if c.cfg.Logger != nil {
		c.cfg.Logger.Warn("group commit: batch failed, retrying members one by one", "size", len(members), "err", err)
	}
	for _, cl := range members {
		if !cl.answered {
			c.commitMember(ctx, cl)
		}
	}
}

// commitMember commits cl in a transaction of its own and answers it;
// when the rule says so (another transaction recorded the same
// idempotency key first), it runs once more, which then replays that
// transaction's invoice.
func (c *Committer) commitMember(ctx context.Context, cl *call) {
	if err := c.attempt(ctx, oneMember, [][]*call{{cl}}, c.cfg.Options); err != nil {
		_ = c.attempt(ctx, memberAgain, [][]*call{{cl}}, c.cfg.Options) // memberAgain is never retried: nil
	}
}
