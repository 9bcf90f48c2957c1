package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/invoiced/invoiced/migrations"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestServeOnANewerSchema: a database migrated past what this binary knows
// (a newer binary ran migrate during a rolling deploy) is served only when
// every newer migration declares binaries of this version compatible (an
// expand step); otherwise serve refuses with a message that says why.
func TestServeOnANewerSchema(t *testing.T) {
	t.Parallel()
	url := dbtest.NewEmptyURL(t)
	ctx := t.Context()
	if _, _, err := cli(ctx, url, "migrate"); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, target, err := migrations.Versions(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	// A newer binary applied two migrations.
	if _, err := pool.Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true), ($2, true)`, target+1, target+2); err != nil {
		t.Fatal(err)
	}
	// migrate of this (older) binary applies nothing and does not fail.
	if out, _, err := cli(ctx, url, "migrate"); err != nil || !strings.Contains(out, "schema version "+strconv.FormatInt(target+2, 10)) {
		t.Fatalf("migrate of an older binary on a newer schema: %q, %v", out, err)
	}
	serve := func() (string, error) {
		srvCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		var out, errOut testwait.Buffer
		done := make(chan error, 1)
		go func() {
			done <- run(srvCtx, []string{"serve", "--addr", "127.0.0.1:0", "--min-conns", "0"}, dbEnv(url), &out, &errOut)
		}()
		var err error
		stopped := false
		testwait.Until(t, 15*time.Second, func() bool {
			select {
			case err = <-done:
				stopped = true
				return true
			default:
			}
			return strings.Contains(out.String(), "listening") || strings.Contains(errOut.String(), "listening")
		}, "serve to listen or stop (stdout %s, stderr %s)", &out, &errOut)
		if stopped {
			return out.String(), err
		}
		cancel()
		return out.String() + errOut.String(), <-done
	}
	if _, err := serve(); err == nil || !strings.Contains(err.Error(), "newer than this invoiced") || !strings.Contains(err.Error(), "docs/operations.md") {
		t.Fatalf("serve on a schema with undeclared newer migrations: %v", err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO schema_compat (version, serves_from) VALUES ($1, $2)`, target+1, target); err != nil {
		t.Fatal(err)
	}
	if _, err := serve(); err == nil || !strings.Contains(err.Error(), "migration "+strconv.FormatInt(target+2, 10)) {
		t.Fatalf("serve with one of two newer migrations declared compatible: %v", err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO schema_compat (version, serves_from) VALUES ($1, $2)`, target+2, target-1); err != nil {
		t.Fatal(err)
	}
	if out, err := serve(); err != nil {
		t.Fatalf("serve with every newer migration declared compatible: %v\n%s", err, out)
	}
}
