package apikey

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"slices"
	"strings"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/textcut"
)

// Principal is who an API key acts for: its seller, scopes and series.
type Principal struct {
	Seller gst.Seller
	Prefix string   // the key's public prefix, to look it up again
	Scopes Scopes   // what the key may do
	Series []string // upper-case series codes the key is restricted to; nil: every series
}

// Principal returns who the key in r acts for; prefix is the key's prefix.
func (r Row) Principal(prefix string) Principal {
	return Principal{Seller: r.seller, Prefix: prefix, Scopes: r.scopes, Series: r.series}
}

// Revoked reports whether the key has been revoked.
func (r Row) Revoked() bool { return r.revoked }

// Has reports whether p holds the scope named scope (false for a name
// that is no scope).
func (p Principal) Has(scope string) bool {
	b := scopeOf(scope)
	return b != 0 && p.Scopes.Has(b)
}

// MaySeries reports whether p may use the series with canonical code
// code.
func (p Principal) MaySeries(code string) bool {
	return p.Series == nil || slices.Contains(p.Series, strings.ToUpper(code))
}

// CheckSeries returns nil when p may use series code, otherwise
// ErrSeriesForbidden naming the series the key may use.
func (p Principal) CheckSeries(code string) error {
	if p.MaySeries(code) {
		return nil
	}
	return apperr.Errorf(ErrSeriesForbidden, "this API key may only use series %s, not %s", textcut.To(strings.Join(p.Series, ", "), 120), textcut.To(code, textcut.Echo))
}

// CheckAllSeries returns ErrSeriesForbidden when p is restricted to some
// series, nil otherwise: for operations over every series of the seller.
func (p Principal) CheckAllSeries() error {
	if p.Series == nil {
		return nil
	}
	return apperr.Errorf(ErrSeriesForbidden, "this API key may only use series %s, and this covers all of the seller's series", textcut.To(strings.Join(p.Series, ", "), 120))
}

// LookupFunc finds the stored key with prefix, found false when there is
// none; Lookup is one, a cache in front of it another.
type LookupFunc func(ctx context.Context, prefix string) (row Row, found bool, err error)

// dummyHash is compared against when no key has the prefix, so that an
// unknown prefix costs about as much as a wrong secret.
var dummyHash = sha256.Sum256([]byte("invoiced: no such key"))

// Authenticate returns the principal of the bearer key in header (an
// Authorization header's value), found through lookup. It fails with
// ErrUnauthorized when the header is missing or malformed, the key is
// unknown or revoked, or its secret does not match (each after the same
// work: one lookup and one hash comparison), and with lookup's error
// otherwise.
func Authenticate(ctx context.Context, lookup LookupFunc, header string) (Principal, error) {
	const bearer = "Bearer "
	if len(header) < len(bearer) || !strings.EqualFold(header[:len(bearer)], bearer) {
		return Principal{}, ErrUnauthorized
	}
	prefix, secret, ok := Parse(strings.TrimSpace(header[len(bearer):]))
	if !ok {
		return Principal{}, ErrUnauthorized
	}
	row, found, err := lookup(ctx, prefix)
	if err != nil {
		return Principal{}, err
	}
	got := sha256.Sum256([]byte(secret))
	want := dummyHash[:]
	if found {
		want = row.secretHash
	}
	match := subtle.ConstantTimeCompare(got[:], want) == 1
	if !found || !match || row.revoked {
		return Principal{}, ErrUnauthorized
	}
	return row.Principal(prefix), nil
}
