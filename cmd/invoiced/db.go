package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/invoiced/invoiced/series"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// openPool connects to DATABASE_URL with pgx's default pool size and checks
// the connection. It fails when the variable is unset, malformed or the
// database does not answer within ten seconds.
func openPool(ctx context.Context, getenv func(string) string) (*pgxpool.Pool, error) {
	return openPoolSized(ctx, getenv, 0)
}

// openPoolSized is openPool with at most maxConns connections (0 keeps the
// URL's pool_max_conns or pgx's default). It fails like openPool.
func openPoolSized(ctx context.Context, getenv func(string) string, maxConns int32) (*pgxpool.Pool, error) {
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
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "invoiced"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to %s:%d/%s: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, err)
	}
	return pool, nil
}

// openSeller connects to DATABASE_URL and returns the pool (the caller
// closes it) and the seller registered under gstin. It fails as openPool
// does, and with cmd's explanation when the GSTIN is invalid or unknown.
func openSeller(ctx context.Context, e env, cmd, gstin string) (*pgxpool.Pool, series.Seller, error) {
	pool, err := openPool(ctx, e.getenv)
	if err != nil {
		return nil, series.Seller{}, err
	}
	seller, err := series.SellerByGSTIN(ctx, pool, gstin)
	if err != nil {
		pool.Close()
		return nil, series.Seller{}, explain(cmd, err)
	}
	return pool, seller, nil
}
