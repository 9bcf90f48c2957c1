package invoice

import "github.com/invoiced/invoiced/internal/apperr"

// Errors returned by this package; match them with errors.Is.
var (
	ErrInvalid          = apperr.New(apperr.Invalid, "invalid_invoice", "the invoice is not valid")
	ErrNotFound         = apperr.New(apperr.NotFound, "invoice_not_found", "invoice not found")
	ErrAlreadyCancelled = apperr.New(apperr.Conflict, "already_cancelled", "the invoice is already cancelled")
	ErrKeyInProgress    = apperr.New(apperr.Conflict, "idempotency_key_in_progress", "a request with this Idempotency-Key is still being processed")
	ErrKeyReused        = apperr.New(apperr.Invalid, "idempotency_key_reused", "this Idempotency-Key was used with a different request")
	// ErrKeyRace is returned by IssueTx when another transaction recorded
	// the same idempotency key first; the caller retries and replays.
	ErrKeyRace = apperr.New(apperr.Conflict, "idempotency_key_race", "a concurrent request recorded this Idempotency-Key first; retry to replay it")
)
