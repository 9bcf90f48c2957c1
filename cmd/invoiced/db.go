package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/sellers"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/migrations"
	"github.com/jackc/pgx/v5/pgxpool"
)

// openPool connects to DATABASE_URL with pgx's default pool size, checks
// the connection and that the schema is migrated. It fails when the variable
// is unset or malformed, when no database answers within ten seconds
// (naming the hosts tried and how long it waited), and when the schema is
// older than this binary (asking for `invoiced migrate`).
func openPool(ctx context.Context, getenv func(string) string) (*pgxpool.Pool, error) {
	return openPoolSized(ctx, getenv, 0, 0)
}

// openPoolSized is openPool with at most maxConns connections and, when
// minConns is positive, at least minConns kept open; see connect.
func openPoolSized(ctx context.Context, getenv func(string) string, maxConns, minConns int32) (*pgxpool.Pool, error) {
	pool, err := connect(ctx, getenv, maxConns, minConns)
	if err != nil {
		return nil, err
	}
	if err := requireMigrated(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// requireMigrated fails when the schema behind pool is older than the
// migrations this binary carries: every command but migrate would
// otherwise fail on a missing table or column with a message that does not
// say what to do.
func requireMigrated(ctx context.Context, pool *pgxpool.Pool) error {
	current, target, err := migrations.Versions(ctx, pool)
	if err != nil {
		return err
	}
	if current < target {
		if current == 0 {
			return fmt.Errorf("the database has no invoiced schema yet: run `invoiced migrate` first (with the same DATABASE_URL)")
		}
		return fmt.Errorf("the database schema is at version %d and this invoiced needs %d: run `invoiced migrate` first", current, target)
	}
	return nil
}

// connectTimeout bounds the first ping of a command's pool.
const connectTimeout = 10 * time.Second

// connect opens a pool on DATABASE_URL without looking at the schema (for
// migrate), with at most maxConns connections (0 keeps the URL's
// pool_max_conns or pgx's default) and, when minConns is positive, at
// least minConns kept open (the pool opens them in the background; see
// warmPool; 0 keeps the URL's pool_min_conns). Connections are replaced
// after pgx's lifetime (an hour, or the URL's pool_max_conn_lifetime);
// unless the URL says otherwise they expire spread over a quarter of it,
// not all at once, so a pool opened in one moment is not reopened in one
// moment under load. It fails when the variable is unset or malformed, or
// when no database answers within connectTimeout; that error names every
// host of the URL and how long it waited.
func connect(ctx context.Context, getenv func(string) string, maxConns, minConns int32) (*pgxpool.Pool, error) {
	url := getenv("DATABASE_URL")
	if url == "" {
		return nil, errors.New("DATABASE_URL is not set (make run sets it to a local cluster; or export postgres://user@host:port/db)")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors can quote the URL, password included.
		return nil, errors.New("DATABASE_URL is not a valid PostgreSQL connection string")
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	if minConns > 0 {
		cfg.MinConns = min(minConns, cfg.MaxConns)
	}
	if cfg.MaxConnLifetimeJitter == 0 {
		cfg.MaxConnLifetimeJitter = cfg.MaxConnLifetime / 4
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "invoiced"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	began := time.Now()
	pctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, unanswered(cfg, time.Since(began), err)
	}
	// A Citus coordinator's sessions need custom plans (db.ForCitus):
	// the pool is opened again with them.
	citus, err := db.IsCitus(pctx, pool)
	if err != nil || !citus || cfg.ConnConfig.RuntimeParams["plan_cache_mode"] != "" {
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("connect: %w", err)
		}
		return pool, nil
	}
	pool.Close()
	db.ForCitus(cfg.ConnConfig)
	if pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return pool, nil
}

// unanswered describes a database that did not answer: the hosts tried
// (every host of a multi-host URL), the database, how long the attempt
// took and pgx's reason, and what to check.
func unanswered(cfg *pgxpool.Config, took time.Duration, err error) error {
	cc := cfg.ConnConfig
	hosts := []string{net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))}
	for _, f := range cc.Fallbacks {
		hosts = append(hosts, net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port))))
	}
	hosts = slices.Compact(hosts)
	return fmt.Errorf("the database %q at %s did not answer (gave up after %s): %w; check that PostgreSQL runs there and DATABASE_URL names it",
		cc.Database, strings.Join(hosts, ", "), took.Round(time.Millisecond), err)
}

// openSeller connects to DATABASE_URL and returns the pool (the caller
// closes it) and the seller registered under gstin. It fails as openPool
// does, and with cmd's explanation when the GSTIN is invalid or unknown.
func openSeller(ctx context.Context, e env, cmd, gstin string) (*pgxpool.Pool, gst.Seller, error) {
	pool, err := openPool(ctx, e.getenv)
	if err != nil {
		return nil, gst.Seller{}, err
	}
	seller, err := sellers.ByGSTIN(ctx, pool, gstin)
	if err != nil {
		pool.Close()
		return nil, gst.Seller{}, explain(cmd, err)
	}
	return pool, seller, nil
}

// warmPool opens n connections of pool at once (at most the pool's
// maximum), so that the first burst of requests after a start does not
// wait for PostgreSQL to start backends (each new connection costs a
// process and its caches, several milliseconds on a busy machine; what a
// burst of them cost a fresh server: docs/bench.md, "Why some code is
// written by hand"). It waits at most timeout, gives every connection back
// to the pool, and returns how many open connections the pool holds then
// (not counting those still being opened) and the first error if some
// could not be opened (ctx's error if ctx ended): the pool still works,
// and grows on demand as before.
func warmPool(ctx context.Context, pool *pgxpool.Pool, n int, timeout time.Duration) (int, error) {
	n = min(n, int(pool.Config().MaxConns))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conns := make([]*pgxpool.Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() { conns[i], errs[i] = pool.Acquire(ctx) })
	}
	wg.Wait()
	var first error
	for i, c := range conns {
		if c != nil {
			c.Release()
		} else if first == nil {
			first = errs[i]
		}
	}
	st := pool.Stat()
	return int(st.TotalConns() - st.ConstructingConns()), first
}
