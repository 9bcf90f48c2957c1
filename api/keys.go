package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/series"
)

// Scopes an API key may carry.
const (
	ScopeIssue  = "issue"  // issue and cancel invoices
	ScopeRead   = "read"   // read series and invoices
	ScopeManage = "manage" // create series
)

// Errors of API keys. Match them with errors.Is.
var (
	// ErrUnauthorized: the Authorization header is missing, malformed, or
	// names an unknown or revoked key.
	ErrUnauthorized = apperr.New(apperr.Unauthorized, "unauthorized", "a valid API key is required: send Authorization: Bearer KEY")
	// ErrForbidden: the key lacks the scope the operation needs.
	ErrForbidden = apperr.New(apperr.Forbidden, "forbidden", "the API key lacks the scope this operation needs")
	// ErrInvalidScopes: CreateKey was given no scope or an unknown one.
	ErrInvalidScopes = apperr.New(apperr.Invalid, "invalid_scopes", "scopes must be one or more of issue, read, manage")
	// ErrSeriesForbidden: the key is restricted to some series and the
	// operation is on another one (or on all of them).
	ErrSeriesForbidden = apperr.New(apperr.Forbidden, "series_forbidden", "this API key may not use this series")
	// ErrInvalidKeySeries: CreateSeriesKey was given no series, a series
	// the seller does not have, or the manage scope.
	ErrInvalidKeySeries = apperr.New(apperr.Invalid, "invalid_key_series", "a key restricted to series needs one or more of the seller's series and only the issue and read scopes")
	// ErrKeyNotFound: RevokeKey was given a prefix no live key has.
	ErrKeyNotFound = apperr.New(apperr.NotFound, "key_not_found", "no active API key has this prefix")
)

// Key layout: "ik_" + 8 hex characters (the public prefix, the lookup key)
// + "_" + 32 base32 characters (160 random bits, the secret). Only the
// prefix and SHA-256 of the secret are stored.
const (
	keyTag        = "ik_"
	prefixBytes   = 4
	prefixLen     = 2 * prefixBytes
	secretBytes   = 20
	secretLen     = 32 // base32 of 20 bytes, unpadded
	keyLen        = len(keyTag) + prefixLen + 1 + secretLen
	secretEncChar = "abcdefghijklmnopqrstuvwxyz234567"
)

var secretEncoding = base32.NewEncoding(secretEncChar).WithPadding(base32.NoPadding)

// scopeSet is a bit set of scopes.
type scopeSet uint8

const (
	scopeIssueBit scopeSet = 1 << iota
	scopeReadBit
	scopeManageBit
)

func scopeBit(s string) scopeSet {
	switch s {
	case ScopeIssue:
		return scopeIssueBit
	case ScopeRead:
		return scopeReadBit
	case ScopeManage:
		return scopeManageBit
	}
	return 0
}

func (s scopeSet) has(b scopeSet) bool { return s&b == b }

// principal is who a request acts for.
type principal struct {
	seller series.Seller
	scopes scopeSet
	prefix string   // the key's prefix (rate limits)
	series []string // upper-case codes the key is restricted to; nil: all
}

// maySeries reports whether p may use the series with canonical code
// code.
func (p principal) maySeries(code string) bool {
	return p.series == nil || slices.Contains(p.series, strings.ToUpper(code))
}

// checkSeries returns nil when p may use series code, otherwise
// ErrSeriesForbidden naming the series the key may use.
func (p principal) checkSeries(code string) error {
	if p.maySeries(code) {
		return nil
	}
	return apperr.Errorf(ErrSeriesForbidden, "this API key may only use series %s, not %s", clipTo(strings.Join(p.series, ", "), 120), clip(code))
}

// checkAllSeries returns ErrSeriesForbidden when p is restricted to some
// series: for operations over every series of the seller.
func (p principal) checkAllSeries() error {
	if p.series == nil {
		return nil
	}
	return apperr.Errorf(ErrSeriesForbidden, "this API key may only use series %s, and this covers all of the seller's series", clipTo(strings.Join(p.series, ", "), 120))
}

// CreateKey creates an API key for the seller sellerID with scopes (each one
// of ScopeIssue, ScopeRead, ScopeManage; duplicates are ignored) and returns
// the key, "ik_<prefix>_<secret>". The secret is 160 random bits and is
// stored only as its SHA-256 hash, so the returned string is the only copy.
// It fails with ErrInvalidScopes when scopes is empty or holds an unknown
// scope, series.ErrSellerNotFound when there is no such seller, and with the
// database's error otherwise.
func CreateKey(ctx context.Context, db series.DB, sellerID int64, scopes []string) (string, error) {
	norm, err := normalizeScopes(scopes)
	if err != nil {
		return "", err
	}
	return createKey(ctx, db, sellerID, norm, nil)
}

// CreateSeriesKey is CreateKey for a key that may only issue, read and
// cancel in the seller's series codes (case-insensitive; a terminal's
// key): elsewhere it gets 403 series_forbidden, and GET /v1/series lists
// only those series. It fails like CreateKey, and with ErrInvalidKeySeries
// when codes is empty, names a series the seller does not have, or scopes
// holds ScopeManage.
func CreateSeriesKey(ctx context.Context, db series.DB, sellerID int64, scopes, codes []string) (string, error) {
	norm, err := normalizeScopes(scopes)
	if err != nil {
		return "", err
	}
	if slices.Contains(norm, ScopeManage) {
		return "", apperr.Errorf(ErrInvalidKeySeries, "a key restricted to series cannot have the manage scope")
	}
	var canon []string
	for _, c := range codes {
		if c = strings.TrimSpace(c); c == "" {
			continue
		}
		sr, err := series.Get(ctx, db, sellerID, c)
		if errors.Is(err, series.ErrNotFound) {
			return "", apperr.Errorf(ErrInvalidKeySeries, "the seller has no series %q", clip(c))
		}
		if err != nil {
			return "", err
		}
		if !slices.Contains(canon, sr.Code) {
			canon = append(canon, sr.Code)
		}
	}
	if len(canon) == 0 {
		return "", ErrInvalidKeySeries
	}
	return createKey(ctx, db, sellerID, norm, canon)
}

// createKey stores a key with normalised scopes, restricted to
// seriesCodes unless nil, and returns it.
func createKey(ctx context.Context, db series.DB, sellerID int64, norm, seriesCodes []string) (string, error) {
	var secret [secretBytes]byte
	rand.Read(secret[:]) // never fails (crypto/rand documents it)
	sec := secretEncoding.EncodeToString(secret[:])
	hash := sha256.Sum256([]byte(sec))
	// A prefix collision (1 in 2^32 per existing key) is retried.
	for attempt := 0; ; attempt++ {
		var p [prefixBytes]byte
		rand.Read(p[:])
		prefix := hex.EncodeToString(p[:])
		err := insertKey(ctx, db, sellerID, prefix, hash[:], norm, seriesCodes)
		if err == errPrefixTaken && attempt < 5 {
			continue
		}
		if err != nil {
			return "", err
		}
		return keyTag + prefix + "_" + sec, nil
	}
}

// RevokeKey revokes the key whose prefix is prefix (the 8 hex characters
// after "ik_"; a whole key or "ik_<prefix>" is accepted too). Requests with
// the key get 401 from then on; the row is kept. It fails with
// ErrKeyNotFound when no unrevoked key has that prefix.
func RevokeKey(ctx context.Context, db series.DB, prefix string) error {
	p := strings.TrimPrefix(strings.TrimSpace(prefix), keyTag)
	if i := strings.IndexByte(p, '_'); i >= 0 {
		p = p[:i]
	}
	if !isPrefix(p) {
		return apperr.Errorf(ErrKeyNotFound, "%q is not a key prefix (8 hex characters)", prefix)
	}
	return revokeKey(ctx, db, p)
}

func normalizeScopes(scopes []string) ([]string, error) {
	var set scopeSet
	for _, s := range scopes {
		b := scopeBit(strings.TrimSpace(s))
		if b == 0 {
			return nil, apperr.Errorf(ErrInvalidScopes, "unknown scope %q: scopes must be one or more of issue, read, manage", s)
		}
		set |= b
	}
	if set == 0 {
		return nil, ErrInvalidScopes
	}
	var out []string
	for _, s := range []string{ScopeIssue, ScopeRead, ScopeManage} {
		if set.has(scopeBit(s)) {
			out = append(out, s)
		}
	}
	return out, nil
}

// parseKey splits key into prefix and secret, or reports false when it does
// not have the shape of a key.
func parseKey(key string) (prefix, secret string, ok bool) {
	if len(key) != keyLen || !strings.HasPrefix(key, keyTag) || key[len(keyTag)+prefixLen] != '_' {
		return "", "", false
	}
	prefix = key[len(keyTag) : len(keyTag)+prefixLen]
	secret = key[len(keyTag)+prefixLen+1:]
	if !isPrefix(prefix) {
		return "", "", false
	}
	for i := 0; i < len(secret); i++ {
		if !strings.ContainsRune(secretEncChar, rune(secret[i])) {
			return "", "", false
		}
	}
	return prefix, secret, true
}

func isPrefix(p string) bool {
	if len(p) != prefixLen {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// dummyHash is compared against when no key has the prefix, so that an
// unknown prefix costs about as much as a wrong secret.
var dummyHash = sha256.Sum256([]byte("invoiced: no such key"))

// authenticate returns the principal of the bearer key in header (the
// Authorization header's value). It fails with ErrUnauthorized when the
// header is missing or malformed, the key is unknown or revoked, or its
// secret does not match, and with a database error otherwise.
func authenticate(ctx context.Context, lookup func(ctx context.Context, prefix string) (keyRow, bool, error), header string) (principal, error) {
	const bearer = "Bearer "
	if len(header) < len(bearer) || !strings.EqualFold(header[:len(bearer)], bearer) {
		return principal{}, ErrUnauthorized
	}
	prefix, secret, ok := parseKey(strings.TrimSpace(header[len(bearer):]))
	if !ok {
		return principal{}, ErrUnauthorized
	}
	row, found, err := lookup(ctx, prefix)
	if err != nil {
		return principal{}, err
	}
	got := sha256.Sum256([]byte(secret))
	want := dummyHash[:]
	if found {
		want = row.secretHash
	}
	match := subtle.ConstantTimeCompare(got[:], want) == 1
	if !found || !match || row.revoked {
		return principal{}, ErrUnauthorized
	}
	p := principal{seller: row.seller, prefix: prefix, series: row.seriesCodes}
	for _, s := range row.scopes {
		p.scopes |= scopeBit(s)
	}
	return p, nil
}

// Principal is who an API key acts for: its seller and scopes. Other
// front ends (the console) authenticate with it.
type Principal struct {
	Seller    series.Seller
	KeyPrefix string   // the key's public prefix, to look it up again
	Scopes    []string // in the order issue, read, manage
	Series    []string // the series codes the key is restricted to; nil: every series
}

// Has reports whether the principal holds scope.
func (p Principal) Has(scope string) bool {
	for _, s := range p.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

func (p principal) export(prefix string) Principal {
	out := Principal{Seller: p.seller, KeyPrefix: prefix, Series: p.series}
	for _, s := range []string{ScopeIssue, ScopeRead, ScopeManage} {
		if p.scopes.has(scopeBit(s)) {
			out.Scopes = append(out.Scopes, s)
		}
	}
	return out
}

// Authenticate returns the principal of key ("ik_…") sent with request r,
// checked exactly as a bearer key is (through the key cache, at the same
// cost for every failure, within r's client address's failure budget). It
// fails with ErrUnauthorized for a malformed, unknown or revoked key or a
// wrong secret, with a rate_limited error (429) when the address has spent
// its failures, and with a database error otherwise.
func (s *Server) Authenticate(r *http.Request, key string) (Principal, error) {
	p, err := s.authenticate(r, "Bearer "+key)
	if err != nil {
		return Principal{}, err
	}
	prefix, _, _ := parseKey(key)
	return p.export(prefix), nil
}

// KeyPrincipal returns the principal of the live key with prefix, read
// through the key cache: a key revoked since is ErrUnauthorized within the
// cache's TTL. It fails with ErrUnauthorized for an unknown or revoked key
// and with a database error otherwise.
func (s *Server) KeyPrincipal(ctx context.Context, prefix string) (Principal, error) {
	row, found, err := s.cachedKey(ctx, prefix)
	if err != nil {
		return Principal{}, err
	}
	if !found || row.revoked {
		return Principal{}, ErrUnauthorized
	}
	p := principal{seller: row.seller, prefix: prefix, series: row.seriesCodes}
	for _, sc := range row.scopes {
		p.scopes |= scopeBit(sc)
	}
	return p.export(prefix), nil
}

// Options returns the series options (lock timeout) the server issues and
// cancels with.
func (s *Server) Options() series.Options { return s.opt }
