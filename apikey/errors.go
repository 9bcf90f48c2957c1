package apikey

import "github.com/invoiced/invoiced/internal/apperr"

// Errors of API keys. Match them with errors.Is.
var (
	// ErrUnauthorized: the Authorization header is missing, malformed, or
	// names an unknown or revoked key.
	ErrUnauthorized = apperr.New(apperr.Unauthorized, "unauthorized", "a valid API key is required: send Authorization: Bearer KEY")
	// ErrForbidden: the key lacks the scope the operation needs.
	ErrForbidden = apperr.New(apperr.Forbidden, "forbidden", "the API key lacks the scope this operation needs")
	// ErrInvalidScopes: Create was given no scope or an unknown one.
	ErrInvalidScopes = apperr.New(apperr.Invalid, "invalid_scopes", "scopes must be one or more of issue, read, manage")
	// ErrSeriesForbidden: the key is restricted to some series and the
	// operation is on another one (or on all of them).
	ErrSeriesForbidden = apperr.New(apperr.Forbidden, "series_forbidden", "this API key may not use this series")
	// ErrInvalidKeySeries: CreateForSeries was given no series, a series
	// the seller does not have, or the manage scope.
	ErrInvalidKeySeries = apperr.New(apperr.Invalid, "invalid_key_series", "a key restricted to series needs one or more of the seller's series and only the issue and read scopes")
	// ErrKeyNotFound: Revoke was given a prefix no live key has.
	ErrKeyNotFound = apperr.New(apperr.NotFound, "key_not_found", "no active API key has this prefix")
)
