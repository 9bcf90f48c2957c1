package db_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"
)

// pgErr returns a server error with code and the unlocalized severity sev.
func pgErr(code, sev string) *pgconn.PgError {
	return &pgconn.PgError{Severity: sev, SeverityUnlocalized: sev, Code: code, Message: "m"}
}

func TestClassifyTable(t *testing.T) {
	t.Parallel()
	localizedFatal := &pgconn.PgError{Severity: "ВАЖНО", SeverityUnlocalized: "FATAL", Code: pgerrcode.IdleInTransactionSessionTimeout}
	oldServerFatal := &pgconn.PgError{Severity: "FATAL", Code: pgerrcode.InternalError}
	opErr := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	tests := []struct {
		name   string
		err    error
		class  Class
		commit Class // ClassifyCommit's answer
	}{
		{"nil", nil, db.None, db.None},
		{"plain error", errors.New("boom"), db.None, db.OutcomeUnknown},
		{"no rows", pgx.ErrNoRows, db.None, db.OutcomeUnknown},
		{"lock timeout", pgErr(pgerrcode.LockNotAvailable, "ERROR"), db.LockTimeout, db.LockTimeout},
		{"lock timeout wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", pgErr("55P03", "ERROR"))), db.LockTimeout, db.LockTimeout},
		{"lock timeout as apperr cause", apperr.WithCause(apperr.New(apperr.Internal, "x", "x"), pgErr("55P03", "ERROR")), db.LockTimeout, db.LockTimeout},
		{"row moved", pgErr(db.CodeRowMoved, "ERROR"), db.RowMoved, db.RowMoved},
		{"translated row moved, no cause", db.ErrRowMoved, db.RowMoved, db.RowMoved},
		{"translated lock timeout", fmt.Errorf("x: %w", apperr.WithCause(db.ErrLockTimeout, nil)), db.LockTimeout, db.LockTimeout},
		{"outcome unknown sentinel", apperr.WithCause(db.ErrOutcomeUnknown, io.EOF), db.OutcomeUnknown, db.OutcomeUnknown},
		{"unique violation", pgErr(pgerrcode.UniqueViolation, "ERROR"), db.Constraint, db.Constraint},
		{"foreign key violation", pgErr(pgerrcode.ForeignKeyViolation, "ERROR"), db.Constraint, db.Constraint},
		{"check violation", pgErr(pgerrcode.CheckViolation, "ERROR"), db.Constraint, db.Constraint},
		{"other invoiced_require code", pgErr(db.CodeKeyHeld, "ERROR"), db.None, db.None},
		{"syntax error", pgErr(pgerrcode.SyntaxError, "ERROR"), db.None, db.None},
		{"connection exception", pgErr(pgerrcode.ConnectionFailure, "FATAL"), db.Unavailable, db.OutcomeUnknown},
		{"admin shutdown", pgErr(pgerrcode.AdminShutdown, "FATAL"), db.Unavailable, db.OutcomeUnknown},
		{"crash shutdown", pgErr(pgerrcode.CrashShutdown, "FATAL"), db.Unavailable, db.OutcomeUnknown},
		{"cannot connect now", pgErr(pgerrcode.CannotConnectNow, "FATAL"), db.Unavailable, db.OutcomeUnknown},
		{"too many connections", pgErr(pgerrcode.TooManyConnections, "FATAL"), db.Unavailable, db.OutcomeUnknown},
		{"statement cancelled", pgErr(pgerrcode.QueryCanceled, "ERROR"), db.Unavailable, db.Unavailable},
		{"localized FATAL", localizedFatal, db.Unavailable, db.OutcomeUnknown},
		{"FATAL without unlocalized severity", oldServerFatal, db.Unavailable, db.OutcomeUnknown},
		{"PANIC", pgErr(pgerrcode.InternalError, "PANIC"), db.Unavailable, db.OutcomeUnknown},
		{"ERROR of an unknown code", pgErr(pgerrcode.InternalError, "ERROR"), db.None, db.None},
		{"bad password", pgErr(pgerrcode.InvalidPassword, "FATAL"), db.None, db.OutcomeUnknown},
		{"unknown database", pgErr(pgerrcode.InvalidCatalogName, "FATAL"), db.None, db.OutcomeUnknown},
		{"bad password at connect", &pgconn.ConnectError{Config: &pgconn.Config{}}, db.Unavailable, db.OutcomeUnknown},
		{"EOF", io.EOF, db.Unavailable, db.OutcomeUnknown},
		{"unexpected EOF wrapped", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), db.Unavailable, db.OutcomeUnknown},
		{"net error", opErr, db.Unavailable, db.OutcomeUnknown},
		{"closed network connection", net.ErrClosed, db.Unavailable, db.OutcomeUnknown},
		{"deadline", context.DeadlineExceeded, db.Unavailable, db.OutcomeUnknown},
		{"cancelled", fmt.Errorf("acquire: %w", context.Canceled), db.Unavailable, db.OutcomeUnknown},
		{"closed pool", puddle.ErrClosedPool, db.Unavailable, db.OutcomeUnknown},
		{"server answered ROLLBACK", pgx.ErrTxCommitRollback, db.None, db.None},
		{"begin failed", &db.TxError{Op: db.OpBegin, Err: io.EOF}, db.Unavailable, db.OutcomeUnknown},
		{"commit lost", &db.TxError{Op: db.OpCommit, Err: io.EOF}, db.OutcomeUnknown, db.OutcomeUnknown},
		{"commit lost, wrapped", fmt.Errorf("x: %w", &db.TxError{Op: db.OpCommit, Err: pgErr(pgerrcode.AdminShutdown, "FATAL")}), db.OutcomeUnknown, db.OutcomeUnknown},
		{"commit answered ROLLBACK", &db.TxError{Op: db.OpCommit, Err: pgx.ErrTxCommitRollback}, db.None, db.None},
		{"commit refused by a deferred constraint", &db.TxError{Op: db.OpCommit, Err: pgErr(pgerrcode.UniqueViolation, "ERROR")}, db.Constraint, db.Constraint},
	}
	for _, tt := range tests {
		if got := db.Classify(tt.err); got != tt.class {
			t.Errorf("%s: Classify(%v) = %v, want %v", tt.name, tt.err, got, tt.class)
		}
		if got := db.ClassifyCommit(tt.err); got != tt.commit {
			t.Errorf("%s: ClassifyCommit(%v) = %v, want %v", tt.name, tt.err, got, tt.commit)
		}
	}
}

// Class is db.Class, short for the table.
type Class = db.Class

func TestTranslate(t *testing.T) {
	t.Parallel()
	if err := db.Translate(nil, "x"); err != nil {
		t.Fatalf("Translate(nil) = %v", err)
	}
	lock := pgErr(pgerrcode.LockNotAvailable, "ERROR")
	err := db.Translate(lock, "series: lock counter")
	if !errors.Is(err, db.ErrLockTimeout) || !errors.Is(err, lock) || apperr.KindOf(err) != apperr.Unavailable {
		t.Fatalf("lock timeout translated to %v (kind %v)", err, apperr.KindOf(err))
	}
	moved := pgErr(db.CodeRowMoved, "ERROR")
	if err := db.Translate(moved, "x"); !errors.Is(err, db.ErrRowMoved) || !errors.Is(err, moved) {
		t.Fatalf("row moved translated to %v", err)
	}
	other := errors.New("boom")
	err = db.Translate(other, "reports: documents issued")
	if err.Error() != "reports: documents issued: boom" || !errors.Is(err, other) || apperr.KindOf(err) != apperr.Internal {
		t.Fatalf("other error translated to %q (kind %v)", err, apperr.KindOf(err))
	}
	// A lost COMMIT is not mapped: only callers with an Idempotency-Key answer ErrOutcomeUnknown.
	lost := &db.TxError{Op: db.OpCommit, Err: io.EOF}
	err = db.TranslateTx(lost, "series")
	if err.Error() != "series: commit: EOF" || errors.Is(err, db.ErrOutcomeUnknown) || db.Classify(err) != db.OutcomeUnknown {
		t.Fatalf("lost commit translated to %q, class %v", err, db.Classify(err))
	}
	refused := errors.New("refused")
	if err := db.TranslateTx(refused, "series"); err != refused {
		t.Fatalf("TranslateTx changed fn's error to %v", err)
	}
	if err := db.TranslateTx(nil, "series"); err != nil {
		t.Fatalf("TranslateTx(nil) = %v", err)
	}
	begin := &db.TxError{Op: db.OpBegin, Err: pgErr(pgerrcode.LockNotAvailable, "ERROR")}
	if err := db.TranslateTx(begin, "series"); !errors.Is(err, db.ErrLockTimeout) {
		t.Fatalf("TranslateTx(lock timeout at BEGIN) = %v", err)
	}
	if got := (&db.TxError{Op: db.OpCommit, Err: io.EOF}).Error(); got != "EOF" {
		t.Fatalf("TxError message %q, want its cause's", got)
	}
	down := pgErr(pgerrcode.AdminShutdown, "FATAL")
	if err := db.Translate(down, "x"); db.Classify(err) != db.Unavailable || apperr.KindOf(err) != apperr.Internal {
		t.Fatalf("unavailable translated to %v, class %v", err, db.Classify(err))
	}
}

func TestViolatedAndSQLState(t *testing.T) {
	t.Parallel()
	v, ok := db.Violated(fmt.Errorf("x: %w", &pgconn.PgError{Code: pgerrcode.UniqueViolation, TableName: "t", ConstraintName: "t_pkey"}))
	if !ok || v != (db.Violation{Code: pgerrcode.UniqueViolation, Table: "t", Constraint: "t_pkey"}) {
		t.Fatalf("Violated = %+v, %v", v, ok)
	}
	// A Citus coordinator passes a worker's error on without its fields,
	// naming the shard in the message; the schema's names come back.
	for _, c := range []struct{ msg, wantTable, wantConstraint string }{
		{`insert or update on table "series_counters_102067" violates foreign key constraint "series_counters_series_owner_fkey_102067"`,
			"series_counters", "series_counters_series_owner_fkey"},
		{`duplicate key value violates unique constraint "idempotency_keys_pkey_102044"`, "", "idempotency_keys_pkey"},
		{`duplicate key value violates unique constraint "t_pkey"`, "", "t_pkey"},
	} {
		v, ok := db.Violated(&pgconn.PgError{Code: pgerrcode.ForeignKeyViolation, Message: c.msg})
		if !ok || v.Table != c.wantTable || v.Constraint != c.wantConstraint {
			t.Errorf("Violated(%q) = %q, %q; want %q, %q", c.msg, v.Table, v.Constraint, c.wantTable, c.wantConstraint)
		}
	}
	if _, ok := db.Violated(pgErr(pgerrcode.LockNotAvailable, "ERROR")); ok {
		t.Fatal("a lock timeout is not a violation")
	}
	if _, ok := db.Violated(errors.New("x")); ok {
		t.Fatal("a plain error is not a violation")
	}
	if got := db.SQLState(fmt.Errorf("x: %w", pgErr(db.CodePeriodLocked, "ERROR"))); got != db.CodePeriodLocked {
		t.Fatalf("SQLState = %q", got)
	}
	if got := db.SQLState(io.EOF); got != "" {
		t.Fatalf("SQLState(EOF) = %q", got)
	}
}

// The errors below are provoked on a real server.

func setup(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := dbtest.New(t)
	if _, err := pool.Exec(t.Context(), `CREATE TABLE t (id int PRIMARY KEY, v int)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `INSERT INTO t VALUES (1, 0)`); err != nil {
		t.Fatal(err)
	}
	return pool
}

func TestClassifyLockTimeoutOnAHeldRow(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := t.Context()
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback(ctx) }()
	if _, err := holder.Exec(ctx, `SELECT 1 FROM t WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	err = db.InTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '50ms'`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE t SET v = 1 WHERE id = 1`)
		return err
	})
	if got := db.Classify(err); got != db.LockTimeout {
		t.Fatalf("Classify(%v) = %v, want lock timeout", err, got)
	}
	if err := db.Translate(err, "x"); !errors.Is(err, db.ErrLockTimeout) {
		t.Fatalf("Translate = %v, want ErrLockTimeout", err)
	}
}

func TestClassifyUniqueViolation(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	_, err := pool.Exec(t.Context(), `INSERT INTO t VALUES (1, 1)`)
	if got := db.Classify(err); got != db.Constraint {
		t.Fatalf("Classify(%v) = %v, want constraint", err, got)
	}
	v, ok := db.Violated(err)
	if !ok || v.Code != pgerrcode.UniqueViolation || v.Table != "t" || v.Constraint != "t_pkey" {
		t.Fatalf("Violated = %+v, %v", v, ok)
	}
}

func TestClassifyRowMovedFromRequire(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	// The requirement QueueAdvance checks under the counter locks.
	_, err := pool.Exec(t.Context(), `SELECT invoiced_require(false, $1, 'counter row moved since it was predicted')`, db.CodeRowMoved)
	if got := db.Classify(err); got != db.RowMoved {
		t.Fatalf("Classify(%v) = %v, want row moved", err, got)
	}
	if err := db.Translate(err, "x"); !errors.Is(err, db.ErrRowMoved) {
		t.Fatalf("Translate = %v, want ErrRowMoved", err)
	}
	_, err = pool.Exec(t.Context(), `SELECT invoiced_require(false, $1, 'key held')`, db.CodeKeyHeld)
	if got, code := db.Classify(err), db.SQLState(err); got != db.None || code != db.CodeKeyHeld {
		t.Fatalf("Classify(%v) = %v, SQLState %q; want none, %s", err, got, code, db.CodeKeyHeld)
	}
}

// terminate ends the backend pid from another session and waits until it
// has exited.
func terminate(t *testing.T, pool *pgxpool.Pool, pid uint32) {
	t.Helper()
	var ok bool
	if err := pool.QueryRow(t.Context(), `SELECT pg_terminate_backend($1::int, 10000)`, pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate backend %d: %v, %v", pid, ok, err)
	}
}

func TestClassifyTerminatedBackend(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := t.Context()
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	terminate(t, pool, conn.PgConn().PID())
	_, err = conn.Exec(ctx, `SELECT 1`)
	if got := db.Classify(err); got != db.Unavailable {
		t.Fatalf("Classify(%v) = %v, want unavailable", err, got)
	}
}

func TestInTxCommitOnATerminatedBackendIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := t.Context()
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	err = db.InTx(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE t SET v = 2 WHERE id = 1`); err != nil {
			return err
		}
		terminate(t, pool, conn.PgConn().PID())
		return nil
	})
	var te *db.TxError
	if !errors.As(err, &te) || te.Op != db.OpCommit {
		t.Fatalf("InTx = %v, want a COMMIT's *TxError", err)
	}
	if got := db.Classify(err); got != db.OutcomeUnknown {
		t.Fatalf("Classify(%v) = %v, want outcome unknown", err, got)
	}
	// Here it did not commit: the backend was gone before COMMIT.
	var v int
	if err := pool.QueryRow(ctx, `SELECT v FROM t WHERE id = 1`).Scan(&v); err != nil || v != 0 {
		t.Fatalf("v = %d, %v; want 0", v, err)
	}
}

func TestInTx(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := t.Context()
	value := func() int {
		t.Helper()
		var v int
		if err := pool.QueryRow(ctx, `SELECT v FROM t WHERE id = 1`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	set := func(v int) func(pgx.Tx) error {
		return func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE t SET v = $1 WHERE id = 1`, v)
			return err
		}
	}

	if err := db.InTx(ctx, pool, set(1)); err != nil || value() != 1 {
		t.Fatalf("InTx = %v, v = %d; want committed 1", err, value())
	}

	refused := errors.New("refused")
	err := db.InTx(ctx, pool, func(tx pgx.Tx) error {
		if err := set(2)(tx); err != nil {
			return err
		}
		return refused
	})
	if err != refused || value() != 1 {
		t.Fatalf("InTx = %v, v = %d; want fn's error unchanged and 1 kept", err, value())
	}

	func() {
		defer func() {
			if r := recover(); r != "bug" {
				t.Fatalf("recovered %v, want the panic to go on", r)
			}
		}()
		_ = db.InTx(ctx, pool, func(tx pgx.Tx) error {
			_ = set(3)(tx)
			panic("bug")
		})
	}()
	if value() != 1 {
		t.Fatalf("v = %d after a panic, want 1 kept", value())
	}

	// A cancelled context still rolls back: the row is not left locked.
	cctx, cancel := context.WithCancel(ctx)
	err = db.InTx(cctx, pool, func(tx pgx.Tx) error {
		if err := set(4)(tx); err != nil {
			return err
		}
		cancel()
		return refused
	})
	if err != refused {
		t.Fatalf("InTx = %v, want fn's error", err)
	}
	lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
	defer lcancel()
	if _, err := pool.Exec(lctx, `UPDATE t SET v = 1 WHERE id = 1`); err != nil {
		t.Fatalf("row still locked after a cancelled InTx: %v", err)
	}

	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err = db.InTxWith(ctx, pool, opts, set(5))
	if db.SQLState(err) != pgerrcode.ReadOnlySQLTransaction || value() != 1 {
		t.Fatalf("InTxWith(read only) = %v, v = %d; want a read-only refusal", err, value())
	}
	var iso string
	err = db.InTxWith(ctx, pool, opts, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SHOW transaction_isolation`).Scan(&iso)
	})
	if err != nil || iso != "repeatable read" {
		t.Fatalf("InTxWith = %v, isolation %q", err, iso)
	}
}

func TestInTxCommitRefusedByADeferredConstraint(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `CREATE TABLE d (k int, CONSTRAINT d_k UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)`); err != nil {
		t.Fatal(err)
	}
	err := db.InTx(ctx, pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO d VALUES (1), (1)`)
		return err
	})
	var te *db.TxError
	if !errors.As(err, &te) || te.Op != db.OpCommit {
		t.Fatalf("InTx = %v, want a COMMIT's *TxError", err)
	}
	if got := db.Classify(err); got != db.Constraint {
		t.Fatalf("Classify(%v) = %v, want constraint (a definite refusal, not outcome unknown)", err, got)
	}
}

func TestInTxBeginFails(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	closed, err := pgxpool.NewWithConfig(t.Context(), pool.Config())
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	called := false
	err = db.InTx(t.Context(), closed, func(pgx.Tx) error { called = true; return nil })
	var te *db.TxError
	if called || !errors.As(err, &te) || te.Op != db.OpBegin || db.Classify(err) != db.Unavailable {
		t.Fatalf("InTx on a closed pool = %v (called %v, class %v); want BEGIN's unavailable *TxError", err, called, db.Classify(err))
	}
}
