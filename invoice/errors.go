package invoice

import (
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
)

// Errors returned by this package; match them with errors.Is.
var (
	ErrNotFound         = apperr.New(apperr.NotFound, "invoice_not_found", "invoice not found")
	ErrAlreadyCancelled = apperr.New(apperr.Conflict, "already_cancelled", "the invoice is already cancelled")
	ErrKeyInProgress    = apperr.New(apperr.Conflict, "idempotency_key_in_progress", "a request with this Idempotency-Key is still being processed")
	ErrKeyReused        = apperr.New(apperr.Invalid, "idempotency_key_reused", "this Idempotency-Key was used with a different request")
	// ErrOriginalNotFound is returned by CheckOriginal when a note names an
	// original that the seller did not issue here.
	ErrOriginalNotFound = apperr.New(apperr.Invalid, "original_not_found", "the original invoice was not issued by this seller")
	// ErrOutcomeUnknown is returned when the connection failed after COMMIT
	// was sent: the invoices may or may not be stored. The batch is not
	// retried (that could issue them twice); clients retry with their
	// Idempotency-Key, which finds out (db.ErrOutcomeUnknown, class
	// db.OutcomeUnknown).
	ErrOutcomeUnknown = db.ErrOutcomeUnknown
	// ErrKeyRace is returned by IssueTx when another transaction recorded
	// the same idempotency key first; the caller retries and replays.
	ErrKeyRace = apperr.New(apperr.Conflict, "idempotency_key_race", "a concurrent request recorded this Idempotency-Key first; retry to replay it")
)
