package db

import (
	"fmt"

	"github.com/invoiced/invoiced/internal/apperr"
)

// The application errors of the classes a client can act on, each
// re-exported by the package whose functions return it (series'
// ErrLockTimeout and ErrMoved, invoice's ErrOutcomeUnknown). Classify
// gives an error derived from one of them its class.
var (
	// ErrLockTimeout: a counter row (or an invoice row being cancelled)
	// stayed locked past the lock timeout.
	ErrLockTimeout = apperr.New(apperr.Unavailable, "series_busy", "the series is busy; retry shortly")
	// ErrRowMoved: a counter row was not in the predicted state; the
	// transaction took nothing.
	ErrRowMoved = apperr.New(apperr.Unavailable, "counter_moved", "the series' counter moved on while the request was prepared; retry")
	// ErrOutcomeUnknown: the connection failed after COMMIT was sent: the
	// invoices may or may not be stored. Clients retry with their
	// Idempotency-Key, which finds out.
	ErrOutcomeUnknown = apperr.New(apperr.Unavailable, "commit_outcome_unknown", "the database connection failed while committing; retry with the same Idempotency-Key to learn the outcome")
)

// Translate is the one mapping from a database failure to what callers
// branch on: it returns err as ErrLockTimeout or ErrRowMoved (err as the
// cause) when Classify says so, and otherwise err wrapped as
// "context: err"; nil stays nil. Errors of the other classes keep their
// cause, and Classify still reads them (the HTTP layer answers
// Unavailable with 503). OutcomeUnknown is not mapped here: only a caller
// whose writes a client can look up again (by Idempotency-Key) may answer
// ErrOutcomeUnknown; for the others a lost COMMIT is an outage.
func Translate(err error, context string) error {
	switch Classify(err) {
	case None:
		if err == nil {
			return nil
		}
	case LockTimeout:
		return apperr.WithCause(ErrLockTimeout, err)
	case RowMoved:
		return apperr.WithCause(ErrRowMoved, err)
	}
	return fmt.Errorf("%s: %w", context, err)
}

// TranslateTx returns InTx's error err as its caller returns it: fn's
// error unchanged (it was translated where it arose), and a *TxError as
// Translate(err, prefix+": "+op), "series: commit: conn closed"; nil stays
// nil.
func TranslateTx(err error, prefix string) error {
	te, ok := err.(*TxError) // InTx's own, not one that fn returned wrapped
	if !ok {
		return err
	}
	return Translate(err, prefix+": "+te.Op)
}
