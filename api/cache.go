package api

import (
	"context"
	"sync"
	"time"

	"github.com/invoiced/invoiced/series"
)

// maxCacheEntries bounds each cache; past it the cache starts afresh.
const maxCacheEntries = 10000

// keyCache remembers found API keys (never unknown ones) for a while, which
// keeps the database out of the per-request path of a busy POS; a revoked
// key stops working when its entry expires.
type keyCache struct {
	mu sync.Mutex
	m  map[string]cachedKey
}

type cachedKey struct {
	row     keyRow
	expires time.Time
}

// lookup returns the key row for prefix from the cache or, when absent or
// expired, from the database. It fails only on a database error.
func (c *keyCache) lookup(ctx context.Context, db series.DB, prefix string, now time.Time, ttl time.Duration) (keyRow, bool, error) {
	c.mu.Lock()
	e, ok := c.m[prefix]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.row, true, nil
	}
	row, found, err := lookupKey(ctx, db, prefix)
	if err != nil || !found {
		return row, found, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCacheEntries {
		c.m = map[string]cachedKey{}
	}
	c.m[prefix] = cachedKey{row: row, expires: now.Add(ttl)}
	c.mu.Unlock()
	return row, true, nil
}

// seriesCache remembers series by seller and code. Series never change once
// created and are never deleted, so entries do not expire; unknown codes are
// not cached, so a series is usable as soon as it is created.
type seriesCache struct {
	mu sync.Mutex
	m  map[seriesKey]series.Series
}

type seriesKey struct {
	seller int64
	code   string
}

// get returns the seller's series code, or series.ErrNotFound.
func (c *seriesCache) get(ctx context.Context, db series.DB, sellerID int64, code string) (series.Series, error) {
	k := seriesKey{sellerID, code}
	c.mu.Lock()
	s, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := series.Get(ctx, db, sellerID, code)
	if err != nil {
		return s, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCacheEntries {
		c.m = map[seriesKey]series.Series{}
	}
	c.m[k] = s
	c.mu.Unlock()
	return s, nil
}
