package migrations

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// The lock discipline of migrate (docs/operations.md, "Migrations"): no
// statement of a migration waits for a lock that issuing may queue behind
// for longer than LockTimeout (1 s), so a migration that holds ACCESS
// EXCLUSIVE on one table while it waits for another stops issuing for at
// most that long; it then fails, rolls back (releasing everything) and is
// retried whole after a backoff, while issuing goes on. Every migration is
// either one transaction (a failure undoes it) or, marked NO TRANSACTION,
// written to be rerun from the start, so retrying whole is safe.
//
// Goose runs each file exactly as it is written and hashed: the runner
// never edits a migration's text. The cap is kept from outside, by the
// watcher that already reads which sessions block the migration: a
// statement of the migration's session that has waited longer than the cap
// for any lock but a virtualxid is cancelled (pg_cancel_backend), whatever
// lock_timeout the file set for itself (migrations up to 00041 set 10 s).
// A virtualxid wait is a CREATE, DROP or REINDEX ... CONCURRENTLY (00016,
// 00018) waiting for the transactions older than its build to end: it
// holds only SHARE UPDATE EXCLUSIVE, which no insert or read waits for, so
// the cap would make any transaction open over 1 s (an export, an idle
// session) fail it while it stops nothing. The session's own lock_timeout
// is the one migrate was started with (the server's or role's setting, 0 =
// none by default), and bounds those waits alone.

// Options tune UpWith; the zero value is what Up uses.
type Options struct {
	// LockTimeout is the longest a statement waits for a lock other than
	// a virtualxid before the runner cancels it (default and maximum 1 s).
	LockTimeout time.Duration
	// Attempts is how often one migration is tried when it times out
	// waiting for a lock (default 5).
	Attempts int
	// Backoff is the wait after the first timed-out attempt; it doubles
	// after each, up to 30 s (default 500 ms).
	Backoff time.Duration
	// Logf, when set, is told of every retry and what blocked it.
	Logf func(format string, args ...any)
}

// MaxLockTimeout is the longest lock wait the runner lets a migration have.
const MaxLockTimeout = time.Second

func (o Options) withDefaults() Options {
	if o.LockTimeout <= 0 || o.LockTimeout > MaxLockTimeout {
		o.LockTimeout = MaxLockTimeout
	}
	if o.Attempts <= 0 {
		o.Attempts = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = 500 * time.Millisecond
	}
	return o
}

// UpWith is Up with opt. A migration that times out waiting for a lock is
// retried, opt.Attempts times in all; it then fails with an error that
// names the migration and the sessions that blocked it last (pid, state,
// since when, query), from pg_stat_activity.
func UpWith(ctx context.Context, pool *pgxpool.Pool, opt Options) (int64, error) {
	opt = opt.withDefaults()
	app, err := applicationName()
	if err != nil {
		return 0, err
	}
	cfg := pool.Config().Copy()
	cfg.MaxConns, cfg.MinConns = 2, 0
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	gp, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	defer gp.Close()
	sqlDB := stdlib.OpenDBFromPool(gp)
	defer sqlDB.Close()
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return 0, fmt.Errorf("migrations: locker: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, files, goose.WithSessionLocker(locker))
	if err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	if err := ensureHistory(ctx, pool); err != nil {
		return 0, err
	}
	if err := repairRewrites(ctx, pool); err != nil {
		return 0, err
	}
	if err := checkHistory(ctx, pool); err != nil {
		return 0, err
	}
	for attempt := 1; ; {
		w := watchLocks(ctx, pool, app, opt.LockTimeout)
		res, err := p.UpByOne(ctx)
		blockers, cancelled := w.stop()
		if errors.Is(err, goose.ErrNoNextVersion) {
			break
		}
		if err == nil {
			if err := recordApplied(ctx, pool, res.Source.Version, res.Source.Path); err != nil {
				return 0, err
			}
			attempt = 1
			continue
		}
		name := pendingName(err)
		if !cancelled && db.Classify(err) != db.LockTimeout {
			return 0, fmt.Errorf("migrations: %w", err)
		}
		if attempt >= opt.Attempts {
			return 0, fmt.Errorf("migrations: %s waited for a lock longer than %v in each of %d attempts and was rolled back each time (issuing went on); %s: end or wait for that session, then run invoiced migrate again: %w",
				name, opt.LockTimeout, attempt, describeBlockers(blockers), err)
		}
		wait := min(opt.Backoff<<(attempt-1), 30*time.Second)
		if opt.Logf != nil {
			opt.Logf("migration %s waited for a lock longer than %v (attempt %d of %d), rolled back; %s; retrying in %v", name, opt.LockTimeout, attempt, opt.Attempts, describeBlockers(blockers), wait)
		}
		attempt++
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(wait):
		}
	}
	if err := distribute(ctx, pool); err != nil {
		return 0, err
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrations: version: %w", err)
	}
	return v, nil
}

// applicationName returns a name unique to this run, by which the
// watcher finds the migration's session in pg_stat_activity.
func applicationName() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("migrations: %w", err)
	}
	return "invoiced migrate " + hex.EncodeToString(b), nil
}

// pendingName returns the file of the migration goose's err is about, or
// "the next migration".
func pendingName(err error) string {
	var pe *goose.PartialError
	if errors.As(err, &pe) && pe.Failed != nil && pe.Failed.Source != nil {
		return pe.Failed.Source.Path
	}
	return "the next migration"
}

// blocker is a session that held a lock the migration waited for.
type blocker struct {
	pid   int
	state string
	since string
	query string
}

// watcher polls, while a migration runs, which sessions block the
// migration's session (found by its application_name), keeping the last
// non-empty answer, and cancels the session's statement once it has waited
// longer than the cap for a lock other than a virtualxid (the lock
// discipline above).
type watcher struct {
	quit      chan struct{}
	done      chan struct{}
	mu        sync.Mutex
	last      []blocker
	cancelled bool
}

// watchLocks starts a watcher of the session named app with the cap max;
// stop ends it. Stopping never interrupts a poll in flight: a cancel the
// server has carried out must be counted, or the migration's "canceling
// statement due to user request" would be reported as a failure of its
// own instead of a lock wait naming the blocker.
func watchLocks(ctx context.Context, pool *pgxpool.Pool, app string, max time.Duration) *watcher {
	w := &watcher{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.quit:
				return
			case <-t.C:
			}
			bs := blockersOf(ctx, pool, app)
			stopped := cancelOverdue(ctx, pool, app, max)
			w.mu.Lock()
			if len(bs) > 0 {
				w.last = bs
			}
			w.cancelled = w.cancelled || stopped
			w.mu.Unlock()
		}
	}()
	return w
}

// stop ends the polling and returns the blockers seen last, and whether
// the watcher cancelled a statement of the migration.
func (w *watcher) stop() ([]blocker, bool) {
	close(w.quit)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last, w.cancelled
}

// cancelOverdue cancels the statement of the session named app when it
// has waited longer than max for a lock other than a virtualxid, and
// reports whether it did. The wait is judged and the statement cancelled
// in one statement, so a statement that got its lock meanwhile is not
// cancelled; a failed query cancels nothing.
func cancelOverdue(ctx context.Context, pool *pgxpool.Pool, app string, max time.Duration) bool {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_cancel_backend(m.pid))
		FROM pg_stat_activity m JOIN pg_locks l ON l.pid = m.pid
		WHERE m.application_name = $1 AND NOT l.granted AND l.locktype <> 'virtualxid'
		  AND l.waitstart < clock_timestamp() - make_interval(secs => $2)`, app, max.Seconds()).Scan(&n)
	return err == nil && n > 0
}

// blockersOf returns the sessions blocking the session named app; none
// when it waits for nothing or the query fails.
func blockersOf(ctx context.Context, pool *pgxpool.Pool, app string) []blocker {
	rows, err := pool.Query(ctx, `SELECT DISTINCT b.pid, coalesce(b.state, ''), coalesce(to_char(b.xact_start, 'YYYY-MM-DD HH24:MI:SS TZ'), ''), left(coalesce(b.query, ''), 300)
		FROM pg_stat_activity m CROSS JOIN LATERAL unnest(pg_blocking_pids(m.pid)) AS bp(pid)
		JOIN pg_stat_activity b ON b.pid = bp.pid
		WHERE m.application_name = $1 ORDER BY b.pid`, app)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []blocker
	for rows.Next() {
		var b blocker
		if rows.Scan(&b.pid, &b.state, &b.since, &b.query) == nil {
			out = append(out, b)
		}
	}
	return out
}

func describeBlockers(bs []blocker) string {
	if len(bs) == 0 {
		return "the blocking session was not seen (it ended, or the wait was too short to see)"
	}
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = fmt.Sprintf("pid %d (%s, transaction since %s): %s", b.pid, b.state, b.since, strings.Join(strings.Fields(b.query), " "))
	}
	return "blocked by " + strings.Join(parts, "; ")
}
