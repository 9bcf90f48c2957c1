// Package migrations holds invoiced's schema as embedded goose SQL files and
// applies them through goose's Provider with a Postgres session locker, so two
// processes migrating at once, or one migrating twice, is safe.
package migrations

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed *.sql
var files embed.FS

// Up applies every pending migration to the database behind pool and returns
// the schema version reached. It fails when the database is unreachable, the
// session lock cannot be taken, or a migration fails (that migration is then
// rolled back).
func Up(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return 0, fmt.Errorf("migrations: locker: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, files, goose.WithSessionLocker(locker))
	if err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrations: version: %w", err)
	}
	return v, nil
}

// Versions returns the schema version of the database behind pool and the
// newest version this binary carries. A database behind the binary needs
// Up before the binary can use it. It fails when the database is
// unreachable or its version table cannot be read.
func Versions(ctx context.Context, pool *pgxpool.Pool) (current, target int64, err error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, files)
	if err != nil {
		return 0, 0, fmt.Errorf("migrations: %w", err)
	}
	// goose creates its version table when asked for versions; a database
	// without one is at version 0, and a role that may only serve must not
	// need the right to create tables to learn that.
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('goose_db_version') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, 0, fmt.Errorf("migrations: version: %w", err)
	}
	if !exists {
		sources := p.ListSources()
		if len(sources) > 0 {
			target = sources[len(sources)-1].Version
		}
		return 0, target, nil
	}
	if current, target, err = p.GetVersions(ctx); err != nil {
		return 0, 0, fmt.Errorf("migrations: version: %w", err)
	}
	return current, target, nil
}

// Checksum returns a short digest of the embedded migration files; test
// helpers name their template database after it so a schema change gets a
// fresh template.
func Checksum() string {
	entries, _ := files.ReadDir(".")
	h := fnv.New64a()
	for _, e := range entries {
		b, _ := files.ReadFile(e.Name())
		h.Write([]byte(e.Name()))
		h.Write(b)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}
