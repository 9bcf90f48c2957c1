package invoice

import (
	"errors"
	"fmt"
	"testing"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/dbtest"
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
		committed, err := sendWrites(ctx, tx, b, true)
		_ = tx.Rollback(ctx)
		var n int
		if qerr := pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); qerr != nil {
			t.Fatal(qerr)
		}
		if n != 1 {
			t.Fatalf("the server did not commit (%d rows): the test's premise fails", n)
		}
		if !committed && !errors.Is(err, ErrOutcomeUnknown) {
			t.Errorf("sendWrites after the callback error %q, the COMMIT queued and run: committed=%v, %v; want ErrOutcomeUnknown", cbErr, committed, err)
		}
	}
}
