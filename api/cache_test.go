package api

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/invoiced/invoiced/series"
)

// countingDB is the real database, counting the single-row queries; the
// first one waits until hold is closed (nil: it does not wait), so that a
// test can have every concurrent request arrive while it runs.
type countingDB struct {
	db.Querier
	rows atomic.Int64
	hold chan struct{}
}

func (c *countingDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if c.rows.Add(1) == 1 && c.hold != nil {
		<-c.hold
	}
	return c.Querier.QueryRow(ctx, sql, args...)
}

// TestSeriesCacheFillsOnce: 32 concurrent requests for a series not yet
// cached (a burst after a restart) ask the database once, all get the
// series, and a request whose context ends stops waiting without failing
// the others.
func TestSeriesCacheFillsOnce(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	seller := testfactory.Seller(t, pool, &testfactory.SellerOpts{GSTIN: "24AAQCA8719H1ZC", Name: "Chai"})
	want := testfactory.Series(t, pool, seller, &testfactory.SeriesOpts{Code: "CH1", Format: "CH1/{FY}/{SEQ:5}"})
	db := &countingDB{Querier: pool, hold: make(chan struct{})}
	var freeOnce sync.Once
	free := func() { freeOnce.Do(func() { close(db.hold) }) }
	t.Cleanup(free)
	var c seriesCache
	const n = 32
	var arrived atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	got := make([]gst.Series, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			<-start
			arrived.Add(1)
			got[i], errs[i] = c.get(ctx, db, seller.ID, "CH1")
		})
	}
	impatient, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	var impatientErr error
	impatientDone := make(chan struct{})
	wg.Go(func() {
		<-start
		arrived.Add(1)
		_, impatientErr = c.get(impatient, db, seller.ID, "CH1")
		close(impatientDone)
	})
	close(start)
	// The query goes on until every request has arrived and the impatient
	// one has given up, however slowly the goroutines are scheduled.
	testwait.Until(t, time.Minute, func() bool {
		select {
		case <-impatientDone:
			return arrived.Load() == n+1
		default:
			return false
		}
	}, "all %d requests to arrive and the impatient one to give up while the query runs", n+1)
	free()
	wg.Wait()
	for i := range n {
		if errs[i] != nil || got[i].ID != want.ID {
			t.Fatalf("request %d: %+v, %v", i, got[i], errs[i])
		}
	}
	if impatientErr != context.DeadlineExceeded {
		t.Errorf("a request whose context ended: %v, want context.DeadlineExceeded", impatientErr)
	}
	if q := db.rows.Load(); q != 1 {
		t.Errorf("%d queries for %d concurrent requests, want 1", q, n+1)
	}
	if _, err := c.get(ctx, db, seller.ID, "CH1"); err != nil || db.rows.Load() != 1 {
		t.Errorf("cached: %v, %d queries", err, db.rows.Load())
	}
}

// TestSeriesCacheKeysOnTheCode: spellings of one code share one cache
// entry and one query, and a path segment that cannot be a code never
// reaches the database.
func TestSeriesCacheKeysOnTheCode(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	seller := testfactory.Seller(t, pool, &testfactory.SellerOpts{GSTIN: "24AAQCA8719H1ZC", Name: "Chai"})
	testfactory.Series(t, pool, seller, &testfactory.SeriesOpts{Code: "CH1", Format: "CH1/{FY}/{SEQ:5}"})
	db := &countingDB{Querier: pool}
	var c seriesCache
	for _, code := range []string{"CH1", "ch1", "Ch1", "cH1", " CH1 "} {
		if s, err := c.get(ctx, db, seller.ID, code); err != nil || s.Code != "CH1" {
			t.Fatalf("%q: %+v, %v", code, s, err)
		}
	}
	if len(c.m) != 1 || db.rows.Load() != 1 {
		t.Errorf("5 spellings of CH1: %d cache entries, %d queries; want 1 and 1", len(c.m), db.rows.Load())
	}
	for _, code := range []string{"", "\x00", "CH1/x", "CH1\u0130", "-X", "C" + string(make([]byte, 300))} {
		if _, err := c.get(ctx, db, seller.ID, code); !errors.Is(err, series.ErrNotFound) {
			t.Errorf("%q: %v, want series.ErrNotFound", code, err)
		}
	}
	if q := db.rows.Load(); q != 1 {
		t.Errorf("invalid codes made %d queries, want none", q-1)
	}
}

// A full cache makes room for a new entry by evicting one, never by
// starting afresh: the other entries stay.
func TestCacheEvictsOneWhenFull(t *testing.T) {
	t.Parallel()
	var m map[int]int
	for i := range maxCacheEntries {
		store(&m, i, i)
	}
	store(&m, -1, -1)
	for k := range m {
		if k != -1 {
			store(&m, k, 0) // a key already held evicts nothing
			break
		}
	}
	if len(m) != maxCacheEntries || m[-1] != -1 {
		t.Fatalf("a full cache holds %d entries after one more, want %d with the new one", len(m), maxCacheEntries)
	}
}
