package apikey

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"slices"
	"strings"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/textcut"
	"github.com/invoiced/invoiced/series"
)

// Tag starts every key, before its prefix.
const Tag = "ik_"

// Len is the length of a key: Tag, the prefix, "_" and the secret.
const Len = len(Tag) + prefixLen + 1 + secretLen

const (
	prefixBytes   = 4
	prefixLen     = 2 * prefixBytes
	secretBytes   = 20
	secretLen     = 32 // base32 of 20 bytes, unpadded
	secretEncChar = "abcdefghijklmnopqrstuvwxyz234567"
)

var secretEncoding = base32.NewEncoding(secretEncChar).WithPadding(base32.NoPadding)

// Create creates an API key for the seller sellerID with scopes (each one
// of ScopeIssue, ScopeRead, ScopeManage; duplicates are ignored) and returns
// the key, "ik_<prefix>_<secret>". The secret is 160 random bits and is
// stored only as its SHA-256 hash, so the returned string is the only copy.
// It fails with ErrInvalidScopes when scopes is empty or holds an unknown
// scope, sellers.ErrNotFound when there is no such seller, and with the
// database's error otherwise.
func Create(ctx context.Context, q db.Querier, sellerID int64, scopes []string) (string, error) {
	norm, err := normalizeScopes(scopes)
	if err != nil {
		return "", err
	}
	return create(ctx, q, sellerID, norm, nil)
}

// CreateForSeries is Create for a key that may only issue, read and cancel
// in the seller's series codes (case-insensitive; a terminal's key):
// elsewhere it gets 403 series_forbidden, and GET /v1/series lists only
// those series. It fails like Create, and with ErrInvalidKeySeries when
// codes is empty, names a series the seller does not have, or scopes holds
// ScopeManage.
func CreateForSeries(ctx context.Context, q db.Querier, sellerID int64, scopes, codes []string) (string, error) {
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
		sr, err := series.Get(ctx, q, sellerID, c)
		if errors.Is(err, series.ErrNotFound) {
			return "", apperr.Errorf(ErrInvalidKeySeries, "the seller has no series %q", textcut.To(c, textcut.Echo))
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
	return create(ctx, q, sellerID, norm, canon)
}

// create stores a key with normalised scopes, restricted to seriesCodes
// unless nil, and returns it. It fails with the database's error, or
// errPrefixTaken after five prefix collisions in a row.
func create(ctx context.Context, q db.Querier, sellerID int64, norm, seriesCodes []string) (string, error) {
	var secret [secretBytes]byte
	rand.Read(secret[:]) // never fails (crypto/rand documents it)
	sec := secretEncoding.EncodeToString(secret[:])
	hash := sha256.Sum256([]byte(sec))
	// A prefix collision (1 in 2^32 per existing key) is retried.
	for attempt := 0; ; attempt++ {
		var p [prefixBytes]byte
		rand.Read(p[:])
		prefix := hex.EncodeToString(p[:])
		err := insertKey(ctx, q, sellerID, prefix, hash[:], norm, seriesCodes)
		if err == errPrefixTaken && attempt < 5 {
			continue
		}
		if err != nil {
			return "", err
		}
		return Tag + prefix + "_" + sec, nil
	}
}

// Revoke revokes the key whose prefix is prefix (the 8 hex characters
// after "ik_"; a whole key or "ik_<prefix>" is accepted too). Requests with
// the key get 401 from then on; the row is kept. It fails with
// ErrKeyNotFound when no unrevoked key has that prefix, and with the
// database's error otherwise.
func Revoke(ctx context.Context, q db.Querier, prefix string) error {
	p := strings.TrimPrefix(strings.TrimSpace(prefix), Tag)
	if i := strings.IndexByte(p, '_'); i >= 0 {
		p = p[:i]
	}
	if !isPrefix(p) {
		return apperr.Errorf(ErrKeyNotFound, "%q is not a key prefix (8 hex characters)", prefix)
	}
	return revokeKey(ctx, q, p)
}

// Parse splits key into its prefix and secret, or reports false when it
// does not have the shape of a key.
func Parse(key string) (prefix, secret string, ok bool) {
	if len(key) != Len || !strings.HasPrefix(key, Tag) || key[len(Tag)+prefixLen] != '_' {
		return "", "", false
	}
	prefix = key[len(Tag) : len(Tag)+prefixLen]
	secret = key[len(Tag)+prefixLen+1:]
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

// isPrefix reports whether p is 8 lower-case hex characters.
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
