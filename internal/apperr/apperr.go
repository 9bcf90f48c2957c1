// Package apperr is invoiced's one coded application error. Domain packages
// declare sentinels with a Kind and a snake_case Code; the HTTP layer maps the
// Kind to a status in one table and writes Code and Message as the JSON error
// body. Callers branch with errors.Is against the sentinels.
package apperr

import (
	"errors"
	"fmt"
)

// Kind classifies an error for transport mapping.
type Kind int

// Kinds, each mapped to one HTTP status by the api package.
const (
	Internal     Kind = iota // a fault of ours: 500, logged
	Invalid                  // 422: the values sent cannot be accepted
	Malformed                // 400: the request cannot be parsed
	NotFound                 // 404
	Conflict                 // 409: state forbids it now (duplicate, order, in progress)
	Unavailable              // 503: retry later (database down, lock wait timed out)
	Unauthorized             // 401
	Forbidden                // 403
	TooLarge                 // 413
	Unsupported              // 415
	TooMany                  // 429: a limit on concurrent or repeated requests; retry later
)

// Error is a coded error. Two Errors match under errors.Is when their Codes
// are equal, so a sentinel matches every error derived from it with Errorf
// or WithCause.
type Error struct {
	Kind    Kind
	Code    string // snake_case, stable, part of the API contract
	Message string // one sentence for a person
	Err     error  // cause, never shown to clients
}

// New returns a sentinel error.
func New(kind Kind, code, message string) *Error {
	return &Error{Kind: kind, Code: code, Message: message}
}

// Error returns the message, with the cause when there is one.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same Code.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.Code == e.Code
}

// Errorf returns a copy of sentinel with a specific message.
func Errorf(sentinel *Error, format string, args ...any) *Error {
	return &Error{Kind: sentinel.Kind, Code: sentinel.Code, Message: fmt.Sprintf(format, args...)}
}

// WithCause returns a copy of sentinel carrying cause (kept out of client messages).
func WithCause(sentinel *Error, cause error) *Error {
	return &Error{Kind: sentinel.Kind, Code: sentinel.Code, Message: sentinel.Message, Err: cause}
}

// KindOf returns the Kind of the first *Error in err's chain, or Internal.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// MessageOf returns the client-facing message of err: the Message of the
// first *Error in its chain, or a generic sentence.
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}
