package main

import (
	"fmt"

	"github.com/invoiced/invoiced/internal/apperr"
)

// cliError is an application error shown to the operator: its text is the
// error's client sentence (apperr.MessageOf) prefixed with the command, and
// it still unwraps to the original error for errors.Is.
type cliError struct {
	op  string
	err error
}

// Error returns "op: sentence".
func (e *cliError) Error() string { return e.op + ": " + apperr.MessageOf(e.err) }

// Unwrap returns the original error.
func (e *cliError) Unwrap() error { return e.err }

// explain returns err prefixed with op. Coded application errors (invalid
// GSTIN, duplicate series, …) show only their sentence; internal errors keep
// their full chain, which an operator needs to diagnose them. It returns nil
// for a nil err.
func explain(op string, err error) error {
	if err == nil {
		return nil
	}
	if apperr.KindOf(err) != apperr.Internal {
		return &cliError{op: op, err: err}
	}
	return fmt.Errorf("%s: %w", op, err)
}
