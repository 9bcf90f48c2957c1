// Package dbtest gives each test its own PostgreSQL database, cloned from a
// template that holds the migrated schema, so tests that commit run in
// parallel and never see each other's rows.
//
// The server comes from TEST_DATABASE_URL (make test starts a throw-away
// cluster and sets it). When it is unset and a Docker engine answers,
// PostgreSQL is started once per test binary with testcontainers-go. When
// neither is available the test fails with a message naming both ways; it
// never skips.
package dbtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var (
	serverOnce sync.Once
	serverURL  string
	serverErr  error

	templateOnce sync.Once
	templateName string
	templateErr  error

	counter atomic.Int64
)

// New returns a pool on a fresh, migrated database that is dropped when the
// test ends. It fails the test when no PostgreSQL server is available.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := NewURL(t)
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	cfg.MaxConns = 16
	if Citus(t) {
		db.ForCitus(cfg.ConnConfig)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("dbtest: connect: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// NewURL creates a fresh, migrated database and returns its connection URL,
// for tests that hand a URL to a server or a subprocess. The database is
// dropped (connections forced off) when the test ends.
func NewURL(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	return create(t, admin, template(t, admin))
}

// NewEmptyURL creates a fresh database without the schema (from
// template0) and returns its URL, for tests of the migrations themselves.
// It is dropped when the test ends.
func NewEmptyURL(t testing.TB) string {
	t.Helper()
	return create(t, AdminURL(t), "template0")
}

// create makes a database from tmpl, registers its removal and returns its URL.
func create(t testing.TB, admin, tmpl string) string {
	t.Helper()
	name := fmt.Sprintf("invoiced_test_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, counter.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// On Citus a clone of the migrated template is made on every worker
	// first (citus.go); a database from template0 only on the coordinator.
	var nodes []string
	if tmpl != "template0" {
		ws, err := workers(admin)
		if err != nil {
			t.Fatalf("dbtest: citus workers: %v", err)
		}
		nodes = append(nodes, ws...)
	}
	nodes = append(nodes, admin)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for i := len(nodes) - 1; i >= 0; i-- {
			if err := execOn(ctx, nodes[i], fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name)); err != nil {
				t.Logf("dbtest: drop %s: %v", name, err)
			}
		}
	})
	for _, n := range nodes {
		if err := execOn(ctx, n, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, tmpl)); err != nil {
			t.Fatalf("dbtest: create database: %v", err)
		}
	}
	return withDatabase(admin, name)
}

// AdminURL returns the URL of the test server's maintenance database, or
// fails the test with a message that names both ways to provide one.
func AdminURL(t testing.TB) string {
	t.Helper()
	serverOnce.Do(func() {
		if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
			serverURL = u
			return
		}
		serverURL, serverErr = startContainer()
	})
	if serverErr != nil {
		t.Fatalf("dbtest: no PostgreSQL for tests: set TEST_DATABASE_URL (make test starts a local cluster and sets it), "+
			"or run a Docker engine so testcontainers-go can start one: %v", serverErr)
	}
	return serverURL
}

// template creates the migrated template database once per schema version.
// Test binaries run in parallel, so creation is serialised across processes
// with an advisory lock on the maintenance database.
func template(t testing.TB, admin string) string {
	t.Helper()
	templateOnce.Do(func() {
		templateName = "invoiced_template_" + migrations.Checksum()
		templateErr = createTemplate(admin, templateName)
	})
	if templateErr != nil {
		t.Fatalf("dbtest: template: %v", templateErr)
	}
	return templateName
}

func createTemplate(admin, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return fmt.Errorf("connect %s: %w", redact(admin), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(727374)`); err != nil {
		return err
	}
	// The lock is the session's: closing the connection releases it too.
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(727374)`) }()
	var ready bool
	err = conn.QueryRow(ctx, `SELECT datistemplate FROM pg_database WHERE datname = $1`, name).Scan(&ready)
	if err == nil && ready {
		return nil
	}
	if err == nil { // left half-made by a crashed run
		if _, err := conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE %s WITH (FORCE)`, name)); err != nil {
			return err
		}
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s`, name)); err != nil {
		return err
	}
	ws, err := workers(admin)
	if err != nil {
		return fmt.Errorf("citus workers: %w", err)
	}
	if len(ws) > 0 {
		if err := prepareCitusTemplate(ctx, admin, ws, name); err != nil {
			return err
		}
	}
	pool, err := pgxpool.New(ctx, withDatabase(admin, name))
	if err != nil {
		return err
	}
	_, err = migrations.Up(ctx, pool)
	pool.Close()
	if err != nil {
		return err
	}
	if len(ws) == 0 {
		_, err = conn.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s IS_TEMPLATE true`, name))
		return err
	}
	// The coordinator's copy last: its IS_TEMPLATE says all are ready.
	return sealCitusTemplate(ctx, append(ws, admin), name)
}

func withDatabase(raw, name string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Path = "/" + name
	return u.String()
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the database URL"
	}
	return u.Redacted()
}
