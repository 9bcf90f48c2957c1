package api

import (
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/series"
)

// fillTimeout bounds a cache fill: the query runs for every request waiting
// on it, so no single request's cancellation may stop it.
const fillTimeout = 10 * time.Second

// fill runs query once for all concurrent callers with the same key and
// returns its result, or ctx.Err() when ctx ends first (the query goes on
// for the others). A burst of requests for something not yet cached, as
// after a restart, asks the database once instead of once per request and
// does not open a pool connection per request meanwhile.
func fill[T any](ctx context.Context, g *singleflight.Group, key string, query func(context.Context) (T, error)) (T, error) {
	ch := g.DoChan(key, func() (any, error) {
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fillTimeout)
		defer cancel()
		return query(qctx)
	})
	select {
	case r := <-ch:
		v, _ := r.Val.(T)
		return v, r.Err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// maxCacheEntries bounds each cache; past it an entry makes room by
// evicting another.
const maxCacheEntries = 10000

// store puts v under k in *m. When the map is full, a new key evicts one
// entry, whichever a map iteration yields first (Go starts each at a
// random place): the cache used to start afresh, so that one seller's
// series past the bound emptied it for every seller (series.MaxPerSeller
// now bounds a seller's share too). The caller holds the cache's lock.
func store[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = map[K]V{}
	}
	if _, ok := (*m)[k]; !ok && len(*m) >= maxCacheEntries {
		for old := range *m {
			delete(*m, old)
			break
		}
	}
	(*m)[k] = v
}

// keyCache remembers found API keys for a while, which keeps the database
// out of the per-request path of a busy POS; a revoked key stops working
// when its entry expires. Unknown prefixes are not remembered: see
// Server.authorize for why every failure costs one lookup instead.
type keyCache struct {
	mu    sync.Mutex
	m     map[string]cachedKey
	fills singleflight.Group
}

type cachedKey struct {
	row     apikey.Row
	expires time.Time
}

// peek returns the key row for prefix when the cache holds it unexpired.
func (c *keyCache) peek(prefix string, now time.Time) (apikey.Row, bool) {
	c.mu.Lock()
	e, ok := c.m[prefix]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.row, true
	}
	return apikey.Row{}, false
}

// load looks prefix up in the database (once for all concurrent callers)
// and caches a key found until now+ttl. It fails only on a database error.
func (c *keyCache) load(ctx context.Context, db db.Querier, prefix string, now time.Time, ttl time.Duration) (apikey.Row, bool, error) {
	type found struct {
		row apikey.Row
		ok  bool
	}
	f, err := fill(ctx, &c.fills, prefix, func(ctx context.Context) (found, error) {
		row, ok, err := apikey.Lookup(ctx, db, prefix)
		if err != nil || !ok {
			return found{row, ok}, err
		}
		c.mu.Lock()
		store(&c.m, prefix, cachedKey{row: row, expires: now.Add(ttl)})
		c.mu.Unlock()
		return found{row, true}, nil
	})
	return f.row, f.ok, err
}

// seriesCache remembers series by seller and code. Series never change once
// created and are never deleted, so entries do not expire; unknown codes are
// not cached, so a series is usable as soon as it is created.
type seriesCache struct {
	mu    sync.Mutex
	m     map[seriesKey]gst.Series
	fills singleflight.Group
}

type seriesKey struct {
	seller int64
	code   string
}

// get returns the seller's series code, or series.ErrNotFound. The code is
// normalised (series.ParseCode) before the cache is consulted, so that
// spellings of one code share an entry and a path segment that cannot be
// a code never reaches the database.
func (c *seriesCache) get(ctx context.Context, db db.Querier, sellerID int64, raw string) (gst.Series, error) {
	code, err := series.ParseCode(raw)
	if err != nil {
		return gst.Series{}, apperr.Errorf(series.ErrNotFound, "series %q not found", clip(raw))
	}
	k := seriesKey{sellerID, code}
	c.mu.Lock()
	s, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	return fill(ctx, &c.fills, strconv.FormatInt(sellerID, 10)+"\x00"+code, func(ctx context.Context) (gst.Series, error) {
		s, err := series.Get(ctx, db, sellerID, code)
		if err != nil {
			return s, err
		}
		c.mu.Lock()
		store(&c.m, k, s)
		c.mu.Unlock()
		return s, nil
	})
}
