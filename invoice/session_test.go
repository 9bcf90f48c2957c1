package invoice

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestSessionLostReadsTheUnlocalizedSeverity: a server with lc_messages in
// another language sends FATAL and PANIC translated; the session is lost
// all the same.
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
		if got := sessionLost(c.err); got != c.lost {
			t.Errorf("sessionLost(%v) = %v, want %v", c.err, got, c.lost)
		}
	}
}
