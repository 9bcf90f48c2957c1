package client

import (
	"errors"
	"fmt"
	"time"
)

// Error is an error answer of the server: its HTTP status and the body
// {"error":{"code","message"}}.
type Error struct {
	Status     int           // HTTP status
	Code       string        // snake_case code, e.g. "invalid_invoice"
	Message    string        // a sentence for a developer
	RetryAfter time.Duration // the Retry-After header; 0 when absent
	RequestID  string        // the server's X-Request-Id, for reports
	body       []byte        // the answer's body, for routes that say more
}

// Error returns "status code: message".
func (e *Error) Error() string {
	return fmt.Sprintf("invoiced: %d %s: %s", e.Status, e.Code, e.Message)
}

// Codes a caller may branch on (see api/openapi.yaml for all).
const (
	CodeIdempotencyKeyInProgress = "idempotency_key_in_progress"
	CodeIdempotencyKeyReused     = "idempotency_key_reused"
	CodeCommitOutcomeUnknown     = "commit_outcome_unknown"
	CodeInvalidDate              = "invalid_date"
	CodeDateOutOfOrder           = "date_out_of_order"
	CodeSeriesExhausted          = "series_exhausted"
	CodeAlreadyCancelled         = "already_cancelled"
	CodeRateLimited              = "rate_limited"
	CodePeriodLocked             = "period_locked"
	// CodeParticularsMissing (422) refuses an invoice without what CGST
	// Rule 46 asks of its recipient: a registered Buyer's Address, or for
	// ₹50,000 or more to an unregistered buyer its Name, Address and a
	// ShipTo. The message names the field and the rule.
	CodeParticularsMissing = "particulars_missing"
	// CodeOverRateLimit (429) refuses a request that carries more
	// invoices than the key's rate limit allows at once: it can never
	// pass, so it is not retried; send smaller batches.
	CodeOverRateLimit = "over_rate_limit"
	// CodeServerBusy (503) refuses a request whose body or answer the
	// server's byte budget cannot hold now (serve --max-inflight-bytes);
	// nothing was done, and the client retries after Retry-After.
	CodeServerBusy = "server_busy"
	// CodeTooManyReads (429) refuses a list page when the seller's or
	// the server's list slots stay taken; the client retries.
	CodeTooManyReads = "too_many_reads"
	// CodeEInvoiceCancelWindowClosed (409) refuses the cancel of an
	// invoice whose IRN was registered at the IRP more than 24 hours ago:
	// the invoice stays issued; issue a credit note against it.
	CodeEInvoiceCancelWindowClosed = "e_invoice_cancel_window_closed"
	// CodeEInvoiceEWayBillActive (409) refuses the cancel of an invoice
	// whose IRN carries an active e-way bill: cancel the e-way bill first.
	CodeEInvoiceEWayBillActive = "e_invoice_e_way_bill_active"
	// CodeEInvoiceBusy (409): the IRP workers are settling the invoice's
	// registration; the cancel is retried.
	CodeEInvoiceBusy = "e_invoice_busy"
)

// outcomeError is what a mutating call returns when it stopped (its
// context ended, or an answer that says nothing about earlier attempts
// came back) while an earlier attempt may have taken effect. It wraps the
// reason it stopped and the last attempt's error.
type outcomeError struct {
	key  string
	errs []error
}

func (e *outcomeError) Error() string {
	return "invoiced: outcome unknown (retry with the same Idempotency-Key to learn it): " + errors.Join(e.errs...).Error()
}

func (e *outcomeError) Unwrap() []error { return e.errs }

// IsOutcomeUnknown reports whether err, returned by a mutating call
// (IssueInvoice, CancelInvoice, IssueBatch, CreateSeries, CreateWebhook),
// leaves open whether the call took effect. Retrying with the call's
// Idempotency-Key (see OutcomeKey) learns it; for IssueBatch, sending the
// same items again, which hold their keys.
func IsOutcomeUnknown(err error) bool {
	var oe *outcomeError
	return errors.As(err, &oe)
}

// OutcomeKey returns the Idempotency-Key of the call whose outcome err
// leaves unknown, "" when IsOutcomeUnknown(err) is false or the call has
// no single key (IssueBatch: the keys are in its items).
func OutcomeKey(err error) string {
	var oe *outcomeError
	if errors.As(err, &oe) {
		return oe.key
	}
	return ""
}

// transportError is an attempt that got no answer.
type transportError struct{ err error }

func (e *transportError) Error() string { return "invoiced: no answer: " + e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }
