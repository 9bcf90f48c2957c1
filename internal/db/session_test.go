package db_test

import (
	"errors"
	"testing"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestSessionLostReadsTheUnlocalizedSeverity: a server with lc_messages in
// another language sends FATAL and PANIC translated; the session is lost
// all the same, and a COMMIT that failed so has an unknown outcome.
func TestSessionLostReadsTheUnlocalizedSeverity(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		lost bool
	}{
		{&pgconn.PgError{Severity: "ВАЖНО", SeverityUnlocalized: "FATAL", Code: "57P01"}, true},
		{&pgconn.PgError{Severity: "PANIK", SeverityUnlocalized: "PANIC", Code: "XX000"}, true},
		{&pgconn.PgError{Severity: "FATAL", Code: "57P01"}, true}, // a server before 9.6 sends no unlocalized severity
		{&pgconn.PgError{Severity: "ОШИБКА", SeverityUnlocalized: "ERROR", Code: "23505"}, false},
		{errors.New("unexpected EOF"), true},
	} {
		if got := db.ClassifyCommit(c.err) == db.OutcomeUnknown; got != c.lost {
			t.Errorf("sessionLost(%v) = %v, want %v", c.err, got, c.lost)
		}
	}
}
