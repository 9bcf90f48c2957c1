package invoice

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pipeTx is a pgx.Tx that saves round trips for the Committer: BEGIN is not
// sent on its own but in front of the first statement or batch, and the
// issuing code may send COMMIT at the end of its last batch (then it calls
// committed). Every round trip saved is one the next batch does not wait
// for, which matters most when the database is a few milliseconds away.
// Nested transactions and large objects are not supported.
type pipeTx struct {
	conn   *pgxpool.Conn
	begun  bool
	closed bool
	// plans is the plan_cache_mode setting sent after BEGIN: genericPlans,
	// or customPlans on Citus (strategy.plans).
	plans string
}

var errNested = errors.New("invoice: nested transactions are not supported here")

// begin makes sure BEGIN has been sent before a statement of its own.
func (t *pipeTx) begin(ctx context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	if t.begun {
		return nil
	}
	t.begun = true
	// Without arguments Exec uses the simple protocol, which takes both
	// statements in one round trip.
	_, err := t.conn.Exec(ctx, "BEGIN; "+t.plans)
	return err
}

// genericPlans is sent after BEGIN. Every statement of a Committer
// transaction takes arrays whose length is the batch's; a custom plan,
// which PostgreSQL keeps choosing for short arrays, costs a planning per
// execution (0.13 ms per batch for the counter update on one series) and
// gains nothing. SET LOCAL ends with the transaction, so other users of
// the pool keep custom plans.
//
// customPlans replaces it on Citus (Config.Citus): a generic plan hides the
// parameters that name the seller, so Citus cannot route the statement to
// one shard (and cannot plan some at all).
const (
	genericPlans = "SET LOCAL plan_cache_mode = force_generic_plan"
	customPlans  = "SET LOCAL plan_cache_mode = force_custom_plan"
)

func (t *pipeTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.closed {
		return errResults{pgx.ErrTxClosed}
	}
	if t.begun {
		return t.conn.SendBatch(ctx, b)
	}
	t.begun = true
	nb := &pgx.Batch{}
	nb.Queue("BEGIN")
	nb.Queue(t.plans)
	nb.QueuedQueries = append(nb.QueuedQueries, b.QueuedQueries...)
	br := t.conn.SendBatch(ctx, nb)
	for range 2 { // BEGIN's and SET's own results
		if _, err := br.Exec(); err != nil {
			br.Close()
			return errResults{err}
		}
	}
	return br
}

// committed records that a batch ending in COMMIT succeeded.
func (t *pipeTx) committed() { t.closed = true }

func (t *pipeTx) Commit(ctx context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.closed = true
	if !t.begun {
		return nil
	}
	tag, err := t.conn.Exec(ctx, "COMMIT")
	if err != nil {
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

func (t *pipeTx) Rollback(ctx context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.closed = true
	if !t.begun {
		return nil
	}
	// A connection left inside a transaction is destroyed on Release.
	_, err := t.conn.Exec(ctx, "ROLLBACK")
	return err
}

func (t *pipeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.begin(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.conn.Exec(ctx, sql, args...)
}

func (t *pipeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	return t.conn.Query(ctx, sql, args...)
}

func (t *pipeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.begin(ctx); err != nil {
		return errRow{err}
	}
	return t.conn.QueryRow(ctx, sql, args...)
}

func (t *pipeTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.begin(ctx); err != nil {
		return 0, err
	}
	return t.conn.CopyFrom(ctx, table, cols, src)
}

func (t *pipeTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.conn.Conn().Prepare(ctx, name, sql)
}

func (t *pipeTx) Begin(context.Context) (pgx.Tx, error) { return nil, errNested }
func (t *pipeTx) LargeObjects() pgx.LargeObjects        { return pgx.LargeObjects{} }
func (t *pipeTx) Conn() *pgx.Conn                       { return t.conn.Conn() }

// errResults is a pgx.BatchResults that fails every call with err.
type errResults struct{ err error }

func (e errResults) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, e.err }
func (e errResults) Query() (pgx.Rows, error)         { return nil, e.err }
func (e errResults) QueryRow() pgx.Row                { return errRow(e) }
func (e errResults) Close() error                     { return e.err }
func (e errResults) Tx() pgx.Tx                       { return nil }

type errRow struct{ err error }

func (e errRow) Scan(...any) error { return e.err }
