package invoice

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
)

// TestSendWritesCallbackErrorAfterCommitIsUnknown: a result callback that
// fails while reading a pipeline that ends in COMMIT (a scan, a count of
// returned ids, a check that finds a row moved) stops the reading, not the
// server, which runs the COMMIT it was sent. sendWrites must then not say
// "nothing committed", whatever the callback's error says (a moved row or
// a lock timeout would be retried, issuing twice): its answer is
// ErrOutcomeUnknown, and the write is in fact durable.
func TestSendWritesCallbackErrorAfterCommitIsUnknown(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	for i, cbErr := range []error{
		errors.New("a result callback failed"),
		apperr.WithCause(series.ErrMoved, errors.New("the callback found the counter row moved")),
		apperr.WithCause(series.ErrLockTimeout, errors.New("the callback timed out")),
	} {
		table := fmt.Sprintf("probe%d", i)
		if _, err := pool.Exec(ctx, `CREATE TABLE `+table+` (x int)`); err != nil {
			t.Fatal(err)
		}
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO ` + table + ` VALUES (1) RETURNING x`).QueryRow(func(pgx.Row) error { return cbErr })
		err = sendWrites(ctx, tx, b, true)
		_ = tx.Rollback(ctx)
		var n int
		if qerr := pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); qerr != nil {
			t.Fatal(qerr)
		}
		if n != 1 {
			t.Fatalf("the server did not commit (%d rows): the test's premise fails", n)
		}
		if err != nil && !errors.Is(err, ErrOutcomeUnknown) {
			t.Errorf("sendWrites after the callback error %q, the COMMIT queued and run: %v; want committed (nil) or ErrOutcomeUnknown", cbErr, err)
		}
	}
}

// TestSendWritesLostSessionBeforeCommitIsUnknown: a session that ends
// while its pipeline runs, before COMMIT's answer was read (here killed
// in a statement before the COMMIT), leaves the outcome unknown to the
// client: sendWrites must say ErrOutcomeUnknown, never "committed" (a 201
// for an invoice never stored, whose number the next invoice takes) nor
// a plain error that a retry would treat as "not done". Nothing was
// stored: the session ended before COMMIT ran.
func TestSendWritesLostSessionBeforeCommitIsUnknown(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `CREATE TABLE probe (x int)`); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	pid := tx.Conn().PgConn().PID()
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO probe VALUES (1)`)
	b.Queue(`SELECT pg_sleep(60)`)
	done := make(chan error, 1)
	go func() { done <- sendWrites(ctx, tx, b, true) }()
	testwait.Until(t, 30*time.Second, func() bool {
		var sleeping bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'PgSleep')`, pid).Scan(&sleeping)
		return err == nil && sleeping
	}, "the pipeline to reach pg_sleep")
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1::int)`, pid); err != nil {
		t.Fatal(err)
	}
	var got error
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("sendWrites still running after its session was killed")
	}
	if !errors.Is(got, ErrOutcomeUnknown) {
		t.Errorf("sendWrites after its session was killed before COMMIT: %v; want ErrOutcomeUnknown", got)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM probe`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d rows stored by a session killed before COMMIT", n)
	}
}
