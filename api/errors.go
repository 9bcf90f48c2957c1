package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/db"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/textcut"
	"github.com/labstack/echo/v4"
)

// This file is the one place where errors become HTTP answers.

// statusOf maps each apperr.Kind to its HTTP status.
var statusOf = [...]int{
	apperr.Internal:     http.StatusInternalServerError,
	apperr.Invalid:      http.StatusUnprocessableEntity,
	apperr.Malformed:    http.StatusBadRequest,
	apperr.NotFound:     http.StatusNotFound,
	apperr.Conflict:     http.StatusConflict,
	apperr.Unavailable:  http.StatusServiceUnavailable,
	apperr.Unauthorized: http.StatusUnauthorized,
	apperr.Forbidden:    http.StatusForbidden,
	apperr.TooLarge:     http.StatusRequestEntityTooLarge,
	apperr.Unsupported:  http.StatusUnsupportedMediaType,
	apperr.TooMany:      http.StatusTooManyRequests,
}

// Retry-After values: of every 503 (a lock wait or a database blip is
// short) and of every 429 (an export or a rate limit frees up in seconds).
const (
	retryAfterSeconds        = "1"
	retryAfterTooManySeconds = "5"
)

// Errors of the HTTP layer itself.
var (
	errDBUnavailable    = apperr.New(apperr.Unavailable, "database_unavailable", "the database is not available; retry shortly")
	errInternal         = apperr.New(apperr.Internal, "internal_error", "an internal error occurred; it has been logged")
	errRouteNotFound    = apperr.New(apperr.NotFound, "not_found", "no such resource")
	errMethodNotAllowed = apperr.New(apperr.Malformed, "method_not_allowed", "this method is not allowed on this resource")
	errBodyTooLarge     = apperr.New(apperr.TooLarge, "body_too_large", "the request body is larger than the limit")
	errMalformed        = apperr.New(apperr.Malformed, "malformed_request", "the request cannot be parsed")
)

// maxMessageBytes bounds an error message. Messages quote what the client
// sent (a GSTIN, a format, a field name) so that it can see what was
// wrong; whatever the length of what it sent, the answer stays short.
const maxMessageBytes = 300

// problem is an error resolved for the client.
type problem struct {
	status  int
	code    string
	message string
}

// classify resolves err to the status, code and message the client sees,
// and reports whether it is an internal error that must be logged.
func classify(err error) (problem, bool) {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return echoProblem(he), false
	}
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Kind != apperr.Internal && int(ae.Kind) < len(statusOf) {
		return problem{statusOf[ae.Kind], ae.Code, textcut.To(ae.Message, maxMessageBytes)}, false
	}
	if c := db.Classify(err); c == db.Unavailable || c == db.OutcomeUnknown { // no connection, no answer in time, or a COMMIT's answer lost
		return problem{http.StatusServiceUnavailable, errDBUnavailable.Code, errDBUnavailable.Message}, false
	}
	return problem{http.StatusInternalServerError, errInternal.Code, errInternal.Message}, true
}

// echoProblem maps echo's own errors (unknown route, wrong method, …) to the
// same body as ours.
func echoProblem(he *echo.HTTPError) problem {
	switch he.Code {
	case http.StatusNotFound:
		return problem{http.StatusNotFound, errRouteNotFound.Code, errRouteNotFound.Message}
	case http.StatusMethodNotAllowed:
		return problem{http.StatusMethodNotAllowed, errMethodNotAllowed.Code, errMethodNotAllowed.Message}
	case http.StatusRequestEntityTooLarge:
		return problem{http.StatusRequestEntityTooLarge, errBodyTooLarge.Code, errBodyTooLarge.Message}
	case http.StatusUnsupportedMediaType:
		return problem{http.StatusUnsupportedMediaType, errNotJSON.Code, errNotJSON.Message}
	case http.StatusUnauthorized:
		return problem{http.StatusUnauthorized, apikey.ErrUnauthorized.Code, apikey.ErrUnauthorized.Message}
	}
	if he.Code >= 400 && he.Code < 500 {
		return problem{he.Code, errMalformed.Code, errMalformed.Message}
	}
	return problem{http.StatusInternalServerError, errInternal.Code, errInternal.Message}
}

// handleError is echo's HTTPErrorHandler: it writes err as the JSON error
// body, with Retry-After on 503 and WWW-Authenticate on 401, and logs
// internal errors with the request id.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	p, internal := classify(err)
	if internal {
		s.log.ErrorContext(c.Request().Context(), "internal error", append(requestIDs(c.Response().Header(), c.Request()),
			"method", c.Request().Method, "path", c.Request().URL.Path, "err", err)...)
	}
	writeProblem(c, p)
}

func writeProblem(c echo.Context, p problem) {
	h := c.Response().Header()
	switch p.status {
	case http.StatusServiceUnavailable:
		h.Set("Retry-After", retryAfterSeconds)
	case http.StatusTooManyRequests:
		if h.Get("Retry-After") == "" { // a per-key limit sets its own
			h.Set("Retry-After", retryAfterTooManySeconds)
		}
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="invoiced"`)
	}
	h.Set("Cache-Control", "no-store")
	b, _ := json.Marshal(errorBody{Error: errorDetail{Code: p.code, Message: p.message}})
	_ = c.Blob(p.status, echo.MIMEApplicationJSON, b)
}

// errorBody is the body of every error answer.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Problem returns what a client is shown for err: the HTTP status, the
// error code and the sentence, and whether err is internal (to be logged;
// its detail is not shown). Other front ends (the console) use it so that
// errors map to statuses in this one place.
func Problem(err error) (status int, code, message string, internal bool) {
	p, internal := classify(err)
	return p.status, p.code, p.message, internal
}
