// Package client is a Go client for the invoiced HTTP API
// (api/openapi.yaml): one method per operation, with typed answers and
// errors, and retries that are safe by construction.
//
// # Retries
//
// Every mutating call (IssueInvoice, CancelInvoice) carries an
// Idempotency-Key, made once per call (or given with IdempotencyKey) and
// sent unchanged, with byte-identical bodies, on every attempt, so a retry
// can never issue or cancel twice. IssueBatch gives each item its own key
// (written into the item when the caller left it empty) and resends the
// whole batch, every item's result being a replay or a first issue. A call is retried, with jittered
// exponential backoff that honours Retry-After, until it gets an answer
// that settles it or the caller's context ends, on:
//   - no answer (connection refused or reset, a timeout),
//   - 409 idempotency_key_in_progress (another attempt with the key runs),
//   - 429 (with Retry-After),
//   - 500 and 503 (the outcome is unknown or nothing was done).
//
// Any other 4xx is returned at once as an *Error. These are what
// docs/api.md's table "What an answer lets a client conclude" says a
// client should retry with the same key; everything else it says to fix.
//
// # Knowing the outcome
//
// When a mutating call returns an error, IsOutcomeUnknown tells whether it
// may have taken effect: true when some attempt ended without an answer
// that says "not done" (no answer, 500, 503 commit_outcome_unknown, 409
// idempotency_key_in_progress) and no later answer settled it (401, 403,
// and 409 period_locked or series_leased, which are not final, do not).
// Retrying
// the call with the same IdempotencyKey then learns the outcome: the
// replay of the first answer, or a first success. For IssueBatch, sending
// the same items (which now hold their keys) again learns it.
//
// # Webhooks
//
// CreateWebhook, ListWebhooks and DeleteWebhook manage the seller's
// webhooks; ListEvents replays the events of the last 30 days; a receiver
// checks each delivery with VerifyWebhook before decoding its body.
package client
