package api

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/apperr"
)

// This file holds how a request's API key is authenticated: through the
// key cache, within the client address's failure budget and the key's
// request rate.

// authorize returns the principal the route's guard chain authenticated
// (GuardAuth), after checking that it carries need (the handler's own
// scope, which may be more than the route's). It fails with
// apikey.ErrForbidden (403). A handler calling it on a route registered
// without GuardAuth is a programming error: it fails with an internal
// error (500), and TestAuthorizeOnlyBehindGuardAuth fails for it.
func (s *Server) authorize(c echo.Context, need apikey.Scopes) (apikey.Principal, error) {
	p, ok := principalOf(c.Request())
	if !ok {
		return apikey.Principal{}, fmt.Errorf("api: %s %s calls authorize on a route without GuardAuth", c.Request().Method, c.Path())
	}
	if !p.Scopes.Has(need) {
		return apikey.Principal{}, missingScopes(need, p.Scopes)
	}
	return p, nil
}

// chargeInvoices spends the rate-limit tokens (serve --rate-limit) of
// p's key for a request that carries n invoices (a batch, a device
// upload), beyond the one authorize spent on the request itself, so that
// the limit counts invoices however they are sent. Without a limit it
// does nothing. It fails with errKeyRateLimited (429, Retry-After set,
// nothing spent) when the key has fewer tokens left, and when n is more
// than the key's bucket holds (the limit per second, at least 1) with
// errOverRateLimit (429 over_rate_limit, not to be retried): such a
// request could never pass, and the message says the most one may carry.
func (s *Server) chargeInvoices(c echo.Context, p apikey.Principal, n int) error {
	if s.keyRate == nil || n <= 1 {
		return nil
	}
	rate := strconv.FormatFloat(s.keyRate.rate, 'f', -1, 64)
	if float64(n) > s.keyRate.burst {
		return apperr.Errorf(errOverRateLimit, "this request carries %d invoices; with serve --rate-limit %s one request may carry at most %d invoices: send smaller batches",
			n, rate, int(s.keyRate.burst))
	}
	ok, wait := s.keyRate.takeN(p.Prefix, s.now(), float64(n-1))
	if !ok {
		secs := max(1, int(math.Ceil(wait.Seconds())))
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		return apperr.Errorf(errKeyRateLimited, "this API key may issue %s invoices a second (serve --rate-limit) and this request carries %d; retry in %d s", rate, n, secs)
	}
	return nil
}

// authenticate returns the principal of the bearer key in header (the
// Authorization header's value) for request r: GuardAuth's work on the
// API's routes (Server.bearer), and the console's sign-in (Authenticate).
// It fails with apikey.ErrUnauthorized (401); with errRateLimited (429)
// when the client address has spent its failures and the request is not
// one with a valid key found in the cache; or with a database error.
//
// Every failure with a well-formed key costs the same work, one database
// lookup of the prefix: a key answered from the cache whose secret does
// not match is looked up again (which also refreshes the entry). Otherwise
// a cached key answered a wrong secret in half the time of an unknown
// prefix, and timing told which prefixes are in use. An address out of
// failures gets 429 before any lookup, whichever the kind of failure, so
// that too takes the same time.
func (s *Server) authenticate(r *http.Request, header string) (apikey.Principal, error) {
	var prefix string
	var cached bool
	p, err := apikey.Authenticate(r.Context(), func(ctx context.Context, pfx string) (apikey.Row, bool, error) {
		prefix = pfx
		now := s.now()
		if s.keyTTL >= 0 {
			if row, ok := s.keys.peek(pfx, now); ok {
				cached = true
				return row, true, nil
			}
		}
		if !s.failures.allow(peerAddr(r), now) {
			return apikey.Row{}, false, errRateLimited
		}
		if s.keyTTL < 0 {
			return apikey.Lookup(ctx, s.pool, pfx)
		}
		return s.keys.load(ctx, s.pool, pfx, now, s.keyTTL)
	}, header)
	if errors.Is(err, apikey.ErrUnauthorized) {
		peer, now := peerAddr(r), s.now()
		if !s.failures.allow(peer, now) {
			return apikey.Principal{}, errRateLimited
		}
		s.failures.charge(peer, now)
		if cached {
			if _, _, lerr := s.keys.load(r.Context(), s.pool, prefix, now, s.keyTTL); lerr != nil {
				return apikey.Principal{}, lerr
			}
		}
	}
	return p, err
}

// cachedKey returns the key row of prefix through the key cache (straight
// from the database when the cache is off); found is false for an unknown
// prefix.
func (s *Server) cachedKey(ctx context.Context, prefix string) (apikey.Row, bool, error) {
	now := s.now()
	if s.keyTTL < 0 {
		return apikey.Lookup(ctx, s.pool, prefix)
	}
	if row, ok := s.keys.peek(prefix, now); ok {
		return row, true, nil
	}
	return s.keys.load(ctx, s.pool, prefix, now, s.keyTTL)
}

// Authenticate returns the principal of key ("ik_…") sent with request r,
// checked exactly as a bearer key is (through the key cache, at the same
// cost for every failure, within r's client address's failure budget). It
// fails with apikey.ErrUnauthorized for a malformed, unknown or revoked key
// or a wrong secret, with a rate_limited error (429) when the address has
// spent its failures, and with a database error otherwise.
func (s *Server) Authenticate(r *http.Request, key string) (apikey.Principal, error) {
	return s.authenticate(r, "Bearer "+key)
}

// KeyPrincipal returns the principal of the live key with prefix, read
// through the key cache: a key revoked since is apikey.ErrUnauthorized
// within the cache's TTL. It fails with apikey.ErrUnauthorized for an
// unknown or revoked key and with a database error otherwise.
func (s *Server) KeyPrincipal(ctx context.Context, prefix string) (apikey.Principal, error) {
	row, found, err := s.cachedKey(ctx, prefix)
	if err != nil {
		return apikey.Principal{}, err
	}
	if !found || row.Revoked() {
		return apikey.Principal{}, apikey.ErrUnauthorized
	}
	return row.Principal(prefix), nil
}
