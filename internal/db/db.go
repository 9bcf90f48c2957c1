package db

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Querier runs statements: *pgxpool.Pool, *pgx.Conn and pgx.Tx satisfy it.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Beginner starts transactions: *pgxpool.Pool and *pgx.Conn satisfy it, and
// so does pgx.Tx (a savepoint).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// OptionsBeginner starts transactions with options (isolation level,
// access mode): *pgxpool.Pool and *pgx.Conn satisfy it.
type OptionsBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Operations of a transaction itself, as TxError names them.
const (
	OpBegin  = "begin"
	OpCommit = "commit"
)

// TxError is the failure of BEGIN or COMMIT itself, as InTx returns it.
// Its message is its cause's; Classify reads a COMMIT whose answer was
// lost as OutcomeUnknown, and TranslateTx names the operation.
type TxError struct {
	Op  string // OpBegin or OpCommit
	Err error
}

// Error returns the cause's message.
func (e *TxError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *TxError) Unwrap() error { return e.Err }

// InTx runs fn in a transaction begun on b and commits it when fn returns
// nil. It rolls back when fn returns an error or panics (the panic goes
// on), with a context that survives the cancellation of ctx. It returns
// fn's error unchanged, or a *TxError when BEGIN or COMMIT fails.
func InTx(ctx context.Context, b Beginner, fn func(pgx.Tx) error) error {
	tx, err := b.Begin(ctx)
	if err != nil {
		return &TxError{Op: OpBegin, Err: err}
	}
	return run(ctx, tx, fn)
}

// InTxWith is InTx for a transaction begun with opts.
func InTxWith(ctx context.Context, b OptionsBeginner, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	tx, err := b.BeginTx(ctx, opts)
	if err != nil {
		return &TxError{Op: OpBegin, Err: err}
	}
	return run(ctx, tx, fn)
}

// run is InTx once the transaction has begun.
func run(ctx context.Context, tx pgx.Tx, fn func(pgx.Tx) error) error {
	// A no-op once Commit ran; otherwise it must run even when ctx ended.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return &TxError{Op: OpCommit, Err: err}
	}
	return nil
}
