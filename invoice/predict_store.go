package invoice

import (
	"context"
	"errors"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL of a predicted transaction: every statement, from
// the keys' locks to COMMIT, in one round trip, with the checks that tell a
// misprediction.

// issuePredicted is issueMany for a transaction whose counter rows are
// predicted to be in the states given (one per group, from the previous
// transaction that wrote them): everything, from the idempotency key
// claims (claims, all expected fresh) to COMMIT, goes in one round trip.
// The database checks the predictions under the locks, each key's lock,
// and (by the unique index, when the keys are inserted) that no key was
// used before; when one fails, the transaction took nothing and
// issuePredicted returns an error matched by mispredicted, after which the
// caller rolls back and issues the groups the ordinary way. It returns
// errPredictRefused, before touching tx, when some group's prediction says
// NextMany would refuse it.
// tx must be fresh: the round trip ends with COMMIT.
func issuePredicted(ctx context.Context, tx pgx.Tx, groups []Group, predicted []series.State, claims []KeyClaim, window *dateWindow, now time.Time, opt series.Options) (out [][]document.Invoice, states []*series.State, err error) {
	w, advs, err := predictWrites(groups, predicted, now)
	if err != nil {
		return nil, nil, err
	}
	batch := &pgx.Batch{}
	if len(claims) > 0 {
		queueRequireKeyLocks(batch, claims)
	}
	if window != nil {
		window.queueRequire(batch)
	}
	series.QueueAdvance(batch, advs, opt)
	// Under the counter locks QueueAdvance took. A locked month fails the
	// round trip like a misprediction: the ordinary path answers it.
	queuePeriodGuard(batch, groups, w.out, now)
	w.queue(batch)
	if err := sendWrites(ctx, tx, batch, true); err != nil {
		return nil, nil, err
	}
	return w.out, w.states, nil
}

// predictWrites numbers and chains groups from the predicted states of
// their counter rows and returns the rows to write and each row's advance
// (its block and the state after). It returns errPredictRefused when some
// group's prediction says NextMany would refuse it, and fails when a group
// does not seal.
func predictWrites(groups []Group, predicted []series.State, now time.Time) (*writes, []series.Advance, error) {
	seals, takes, err := sealGroups(groups)
	if err != nil {
		return nil, nil, err
	}
	blocks := make([]series.Block, len(groups))
	for g, t := range takes {
		var ok bool
		if blocks[g], ok = series.Predict(t, predicted[g], now); !ok {
			return nil, nil, errPredictRefused
		}
	}
	w := numberGroups(groups, blocks, make([]error, len(groups)), seals)
	advs := make([]series.Advance, len(groups))
	for g := range groups {
		advs[g] = series.Advance{Block: blocks[g], After: *w.states[g]}
	}
	return w, advs, nil
}

// errPredictRefused: a predicted group would be refused by NextMany.
var errPredictRefused = errors.New("invoice: prediction says the series refuses the group")

// mispredicted reports whether issuePredicted failed because the database
// refused a prediction (IsMoved), an idempotency key's lock (db.CodeKeyHeld),
// a key already used (ErrKeyRace: the unique index refused its row) or an
// invoice date outside the window by the database's clock
// (db.CodeOutOfWindow), or a backdated invoice's month locked
// (db.CodePeriodLocked); nothing was taken.
func mispredicted(err error) bool {
	if series.IsMoved(err) || errors.Is(err, ErrKeyRace) {
		return true
	}
	switch db.SQLState(err) {
	case db.CodeKeyHeld, db.CodeOutOfWindow, db.CodePeriodLocked:
		return true
	}
	return false
}

// dateWindow is the span of invoice dates of a predicted transaction, for
// the database to check against Policy{BackdateDays} by its own clock.
type dateWindow struct {
	First, Last  time.Time
	BackdateDays int
}

// queueRequire queues on b a requirement that every date of w lies in the
// window on the database's today (IST), read when the statement runs:
// after the statements queued before it (the keys' locks).
func (w *dateWindow) queueRequire(b *pgx.Batch) {
	b.Queue(`SELECT invoiced_require($1::date >= t.today - $3::int AND $2::date <= t.today, $4, 'an invoice date is outside the window')
		FROM (SELECT (clock_timestamp() AT TIME ZONE 'Asia/Kolkata')::date AS today) t`,
		w.First, w.Last, w.BackdateDays, db.CodeOutOfWindow)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
