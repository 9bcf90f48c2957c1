package apikey

import (
	"strings"

	"github.com/invoiced/invoiced/internal/apperr"
)

// Scopes an API key may carry, by the names keys are created with and
// stored under.
const (
	ScopeIssue  = "issue"  // issue and cancel invoices
	ScopeRead   = "read"   // read series and invoices
	ScopeManage = "manage" // create series
)

// Scopes is a set of scopes, one bit each.
type Scopes uint8

// The single-scope sets, for Has and for what an operation needs.
const (
	CanIssue Scopes = 1 << iota
	CanRead
	CanManage
)

// scopeNames lists every scope in its canonical order.
var scopeNames = []string{ScopeIssue, ScopeRead, ScopeManage}

// scopeOf returns the set holding the scope named name, or 0 for a name
// that is no scope.
func scopeOf(name string) Scopes {
	switch name {
	case ScopeIssue:
		return CanIssue
	case ScopeRead:
		return CanRead
	case ScopeManage:
		return CanManage
	}
	return 0
}

// scopesOf returns the set of the scopes named in names; unknown names
// add nothing.
func scopesOf(names []string) Scopes {
	var s Scopes
	for _, n := range names {
		s |= scopeOf(n)
	}
	return s
}

// Has reports whether s holds every scope of need.
func (s Scopes) Has(need Scopes) bool { return s&need == need }

// Names returns the names of the scopes in s, in the order issue, read,
// manage (nil for none).
func (s Scopes) Names() []string {
	var out []string
	for _, n := range scopeNames {
		if s.Has(scopeOf(n)) {
			out = append(out, n)
		}
	}
	return out
}

// normalizeScopes returns the scopes named in names (surrounding spaces
// ignored) without duplicates, in canonical order. It fails with
// ErrInvalidScopes when names is empty or holds an unknown scope.
func normalizeScopes(names []string) ([]string, error) {
	var set Scopes
	for _, s := range names {
		b := scopeOf(strings.TrimSpace(s))
		if b == 0 {
			return nil, apperr.Errorf(ErrInvalidScopes, "unknown scope %q: scopes must be one or more of issue, read, manage", s)
		}
		set |= b
	}
	if set == 0 {
		return nil, ErrInvalidScopes
	}
	return set.Names(), nil
}
