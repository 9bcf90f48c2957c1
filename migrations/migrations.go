// Package migrations holds invoiced's schema as embedded goose SQL files and
// applies them through goose's Provider with a Postgres session locker, so two
// processes migrating at once, or one migrating twice, is safe.
package migrations

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

//go:embed *.sql
var files embed.FS

// manifest holds the SHA-256 of every migration file as sha256sum writes
// it. A migration applied somewhere must never change: a database keeps
// what the text it was migrated with did, whatever the file says later.
//
//go:embed manifest.sha256
var manifest []byte

// checkManifest returns an error naming every migration of fsys whose
// content differs from its line in manifest, every migration without a
// line and every line without its migration; nil when all match.
func checkManifest(fsys fs.FS, manifest []byte) error {
	want := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(manifest))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			return fmt.Errorf("migrations/manifest.sha256: line %q is not \"<sha256>  <file>\"", sc.Text())
		}
		want[name] = sum
	}
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		got := hex.EncodeToString(sum[:])
		switch w, ok := want[name]; {
		case !ok:
			errs = append(errs, fmt.Errorf("migration %s is not in migrations/manifest.sha256: a new migration is added to it in the same commit (cd migrations && sha256sum %s >> manifest.sha256)", name, name))
		case w != got:
			errs = append(errs, fmt.Errorf("migration %s differs from migrations/manifest.sha256 (sha256 %s, recorded %s): never edit a migration that may have been applied, add a new migration that changes the schema instead", name, got, w))
		}
		delete(want, name)
	}
	rest := make([]string, 0, len(want))
	for name := range want {
		rest = append(rest, name)
	}
	slices.Sort(rest)
	for _, name := range rest {
		errs = append(errs, fmt.Errorf("migrations/manifest.sha256 names %s, which does not exist: a migration is never removed", name))
	}
	return errors.Join(errs...)
}

// Up applies every pending migration to the database behind pool and returns
// the schema version reached; on a database with the citus extension it
// then distributes the seller-owned tables (distribute, citus.go). It
// keeps the lock discipline and the history of runner.go and history.go:
// no statement waits for a lock longer than 1 s, a migration that timed
// out is retried whole with backoff, and each migration's SHA-256 is
// recorded as it is applied. It fails when the database is unreachable,
// the session lock cannot be taken, an applied migration's text changed
// (naming the file and both hashes), a migration fails (that migration is
// then rolled back; after its retries, naming what blocked it), or Citus
// refuses to distribute a table.
func Up(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	return UpWith(ctx, pool, Options{})
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

// CheckServable returns nil when this binary may serve the database
// behind pool: its schema is at the newest version the binary carries, or
// newer with every newer migration declaring (in schema_compat, see
// 00007) that binaries of this version still work with it; and, when the
// citus extension exists, every table is distributed (or a reference
// table). It returns an error saying what to do when the schema is older
// (run migrate), newer without that declaration (deploy the newer
// binary) or half-distributed (run migrate), and when the database cannot
// be read.
func CheckServable(ctx context.Context, pool *pgxpool.Pool) error {
	current, target, err := Versions(ctx, pool)
	switch {
	case err != nil:
		return err
	case current < target:
		return fmt.Errorf("the database schema is at version %d and this invoiced needs %d: run `invoiced migrate` first", current, target)
	}
	if err := checkDistributed(ctx, pool); err != nil {
		return err
	}
	if err := checkHistory(ctx, pool); err != nil {
		return err
	}
	if current == target {
		return nil
	}
	var undeclared int64
	err = pool.QueryRow(ctx, `SELECT coalesce(min(v.version_id), 0) FROM goose_db_version v
		LEFT JOIN schema_compat c ON c.version = v.version_id
		WHERE v.is_applied AND v.version_id > $1 AND (c.serves_from IS NULL OR c.serves_from > $1)`, target).Scan(&undeclared)
	if err != nil {
		return fmt.Errorf("migrations: read schema_compat: %w", err)
	}
	if undeclared != 0 {
		return fmt.Errorf("the database schema is at version %d, newer than this invoiced knows (%d), and migration %d does not declare binaries of version %d compatible: deploy the invoiced that migrated it (docs/operations.md, rolling deploys)", current, target, undeclared, target)
	}
	return nil
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
