package invoice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/series"
)

// TestRetryRules pins which failures are retried in smaller transactions,
// per scope: a shared batch is split into series for anything but an
// unknown outcome; a series' batch into members only for a failure that
// need not fail each member alone; a member runs once more only after a
// lost key race, and never a third time.
func TestRetryRules(t *testing.T) {
	t.Parallel()
	pg := func(code, severity string) error {
		return &pgconn.PgError{Code: code, Severity: severity, SeverityUnlocalized: severity}
	}
	for _, tc := range []struct {
		name string
		err  error
		want [scopes]bool // shared, oneSeries, oneMember, memberAgain
	}{
		{"check violation", fmt.Errorf("invoice: insert: %w", pg("23514", "ERROR")), [scopes]bool{true, true, false, false}},
		{"bad key", apperr.Errorf(document.ErrInvalid, "bad"), [scopes]bool{true, true, false, false}},
		{"key race", apperr.WithCause(ErrKeyRace, pg("23505", "ERROR")), [scopes]bool{true, true, true, false}},
		{"lock timeout", apperr.WithCause(series.ErrLockTimeout, pg("55P03", "ERROR")), [scopes]bool{true, false, false, false}},
		{"row moved", apperr.WithCause(series.ErrMoved, pg("IV001", "ERROR")), [scopes]bool{true, false, false, false}},
		{"shutdown", pg("57P01", "FATAL"), [scopes]bool{true, false, false, false}},
		{"connection reset", fmt.Errorf("invoice: begin: %w", io.ErrUnexpectedEOF), [scopes]bool{true, false, false, false}},
		{"deadline", fmt.Errorf("invoice: claim: %w", context.DeadlineExceeded), [scopes]bool{true, false, false, false}},
		{"outcome unknown", apperr.WithCause(ErrOutcomeUnknown, io.EOF), [scopes]bool{false, false, false, false}},
		{"gave up", errGaveUp, [scopes]bool{false, false, false, false}},
	} {
		for s := range scopes {
			if got := retried(s, tc.err); got != tc.want[s] {
				t.Errorf("%s, scope %d: retried %v, want %v", tc.name, s, got, tc.want[s])
			}
		}
	}
	if retried(shared, nil) {
		t.Error("no error, but retried")
	}
	if errors.Is(errGaveUp, ErrKeyRace) {
		t.Fatal("errGaveUp is a key race")
	}
}

// TestStatementFailed: a predicted transaction falls back to the ordinary
// path for the database's answer to a statement, not for a lock wait, a
// lost session or an error that did not come from the server.
func TestStatementFailed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "42883", Severity: "ERROR", SeverityUnlocalized: "ERROR"}, true}, // undefined function
		{&pgconn.PgError{Code: "40P01", Severity: "ERROR", SeverityUnlocalized: "ERROR"}, true}, // deadlock
		{&pgconn.PgError{Code: "23505", Severity: "ERROR", SeverityUnlocalized: "ERROR"}, true},
		{fmt.Errorf("claim: %w", &pgconn.PgError{Code: "55P03", Severity: "ERROR", SeverityUnlocalized: "ERROR"}), false},
		{&pgconn.PgError{Code: "57P01", Severity: "FATAL", SeverityUnlocalized: "FATAL"}, false},
		{&pgconn.PgError{Code: "XX000", Severity: "ВАЖНО", SeverityUnlocalized: "PANIC"}, false},
		{io.ErrUnexpectedEOF, false},
		{context.DeadlineExceeded, false},
	} {
		if got := statementFailed(tc.err); got != tc.want {
			t.Errorf("statementFailed(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
