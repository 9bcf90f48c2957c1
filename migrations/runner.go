package migrations

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// The lock discipline of migrate (docs/operations.md, "Migrations"): no
// statement of a migration waits for a lock longer than LockTimeout
// (1 s), so a migration that holds ACCESS EXCLUSIVE on one table while it
// waits for another stops issuing for at most that long; it then fails,
// rolls back (releasing everything) and is retried whole after a backoff,
// while issuing goes on. The runner enforces it for every migration,
// including those applied long ago and written with a 10 s timeout: the
// session's lock_timeout is the cap, and every lock_timeout a migration
// sets itself is lowered to it in the text given to goose (the file, and
// the SHA-256 recorded of it, stay as they are). Every migration is either
// one transaction (a failure undoes it) or, marked NO TRANSACTION, written
// to be rerun from the start, so retrying whole is safe.
//
// The exception is a CREATE, DROP or REINDEX ... CONCURRENTLY statement
// (00016, 00018): it holds only SHARE UPDATE EXCLUSIVE, which no insert
// or read waits for, while it waits for every transaction older than its
// build, through lock waits that obey lock_timeout. The cap would make any
// transaction open over 1 s (an export, an idle session) fail it, though
// it stops nothing while it waits; so each such statement runs with the
// lock_timeout the caller's session has (the server's or role's setting,
// 0 = none by default), and the cap is set again after it and at the
// start of every migration (in case one failed mid-way).

// Options tune UpWith; the zero value is what Up uses.
type Options struct {
	// LockTimeout is the longest any statement waits for a lock (default
	// and maximum 1 s).
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
	var waitTimeout string
	if err := pool.QueryRow(ctx, `SELECT current_setting('lock_timeout')`).Scan(&waitTimeout); err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	cfg := pool.Config().Copy()
	cfg.MaxConns, cfg.MinConns = 2, 0
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = fmt.Sprintf("%dms", opt.LockTimeout.Milliseconds())
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	gp, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	defer gp.Close()
	db := stdlib.OpenDBFromPool(gp)
	defer db.Close()
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return 0, fmt.Errorf("migrations: locker: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, cappedFS{files, opt.LockTimeout, waitTimeout}, goose.WithSessionLocker(locker))
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
		w := watchBlockers(ctx, pool, app)
		res, err := p.UpByOne(ctx)
		blockers := w.stop()
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
		if !lockTimedOut(err) {
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

// lockTimedOut reports whether err is a statement's lock timeout
// (SQLSTATE 55P03).
func lockTimedOut(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "55P03"
	}
	return strings.Contains(err.Error(), "SQLSTATE 55P03")
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
// migration's session (found by its application_name), and keeps the last
// non-empty answer.
type watcher struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	last   []blocker
}

func watchBlockers(ctx context.Context, pool *pgxpool.Pool, app string) *watcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if bs := blockersOf(ctx, pool, app); len(bs) > 0 {
				w.mu.Lock()
				w.last = bs
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// stop ends the polling and returns the blockers seen last.
func (w *watcher) stop() []blocker {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
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

// cappedFS is the migrations as goose reads them: every lock_timeout a
// migration sets (SET LOCAL lock_timeout = '10s', set_config('lock_timeout',
// '10s', true)) lowered to the runner's.
type cappedFS struct {
	fsys fs.FS
	max  time.Duration
	wait string // lock_timeout of CONCURRENTLY statements
}

var (
	concurrently      = regexp.MustCompile(`(?im)^[ \t]*(?:CREATE|DROP|REINDEX)\b[^;]*\bCONCURRENTLY\b[^;]*;[ \t]*$`)
	upAnnotation      = regexp.MustCompile(`(?m)^--[ \t]*\+goose[ \t]+Up\b.*$`)
	setLockTimeout    = regexp.MustCompile(`(?i)(lock_timeout\s*(=|to)\s*)'[^']*'`)
	configLockTimeout = regexp.MustCompile(`(?i)(set_config\(\s*'lock_timeout'\s*,\s*)'[^']*'`)
)

// capLockTimeouts returns sql with every lock_timeout it sets replaced by
// max.
func capLockTimeouts(sql []byte, max time.Duration) []byte {
	v := []byte(fmt.Sprintf("${1}'%dms'", max.Milliseconds()))
	sql = setLockTimeout.ReplaceAll(sql, v)
	return configLockTimeout.ReplaceAll(sql, v)
}

// uncapConcurrently returns sql with the cap set at the start of its Up
// section and every CONCURRENTLY statement run with lock_timeout wait,
// the cap set again after it. Run after capLockTimeouts, which would
// lower these too.
func uncapConcurrently(sql []byte, max time.Duration, wait string) []byte {
	capped := fmt.Sprintf("SET lock_timeout = '%dms';", max.Milliseconds())
	uncapped := "SET lock_timeout = '" + strings.ReplaceAll(wait, "'", "''") + "';"
	sql = concurrently.ReplaceAllFunc(sql, func(stmt []byte) []byte {
		return []byte(uncapped + "\n" + string(stmt) + "\n" + capped)
	})
	return upAnnotation.ReplaceAllFunc(sql, func(up []byte) []byte {
		return []byte(string(up) + "\n" + capped)
	})
}

func (c cappedFS) Open(name string) (fs.File, error) {
	f, err := c.fsys.Open(name)
	if err != nil || !strings.HasSuffix(name, ".sql") {
		return f, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	b = uncapConcurrently(capLockTimeouts(b, c.max), c.max, c.wait)
	return &memFile{Reader: bytes.NewReader(b), info: sizedInfo{info, int64(len(b))}}, nil
}

type memFile struct {
	*bytes.Reader
	info fs.FileInfo
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Close() error               { return nil }

type sizedInfo struct {
	fs.FileInfo
	size int64
}

func (i sizedInfo) Size() int64 { return i.size }
