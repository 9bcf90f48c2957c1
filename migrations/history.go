package migrations

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"
)

// The history (docs/operations.md, "Migrations"): migrate records in
// invoiced_migration_history, in the database, the SHA-256 of each
// migration's file as it applies it, and migrate and serve compare the
// records with the files the binary carries: an applied migration whose
// text changed since is refused, naming the file and both hashes, for the
// database keeps what the text it ran did. goose_db_version records only
// the version, which survives any edit of the file.
//
// A version applied before the history existed is recorded by the next
// migrate with the hash of the file it carries ("adopted": what it ran
// then cannot be proven any more), unless it is a known rewrite whose
// earlier text left something the current one does not (00022's
// serves_from = 21): that is recorded with the earlier text's hash, and
// repaired by repairRewrites.

// rewrite is an earlier released text of a migration and what makes a
// database that applied it match the current text.
type rewrite struct {
	sums   []string // SHA-256 of the earlier texts
	repair string   // SQL that brings such a database to the current text's schema; empty when none is needed
	// left is SQL returning whether the database shows what an earlier
	// text left (a version adopted without a record is then recorded with
	// that text's hash, and repaired); empty when the texts leave the same.
	left string
}

// knownRewrites are the migrations edited after release, before the
// history existed. 00017-00020 as first released (commit abe66c1) were
// rewritten (8db40be) after the first 00017 had been applied to a
// benchmark database; each old text leaves the schema the rewritten chain
// leaves (the old 00017 added the same columns and filled them in one
// transaction; the new 00018 and 00019 fill only rows still NULL), so no
// repair is needed. 00022's first text (693879e) declared binaries of
// 00021 compatible, the current one those of 00020 too: the repair writes
// that declaration. A database that recorded an old text is repaired by
// migrate, which then records the current hash ("repaired").
var knownRewrites = map[int64]rewrite{
	17: {sums: []string{"364ab3a9bf6a6d72137ec7550758b49df58f6ce58095fe73b4c9ba1667306a73"}},
	18: {sums: []string{"0a5961f0e8aa153b14fb455900ab9dc21dacd7ed0929a3fc340c8da6405b11f7"}},
	19: {sums: []string{"0b79b973d5e34b573368f234e2f858bcbeb4248ed156701cfab39efb3a03b82d"}},
	20: {sums: []string{"904180798b27608038d5018d1282a68dfbf12c08fb3985f17fa1fa82953d9884"}},
	22: {sums: []string{"d0dc272f7b6b4c0f0e7019c006632ab2de5300ec1921bea4b38f980a28d1cc41"},
		repair: `UPDATE schema_compat SET serves_from = 20 WHERE version = 22`,
		left:   `SELECT EXISTS (SELECT FROM schema_compat WHERE version = 22 AND serves_from = 21)`},
}

// repairRewrites applies, for every history record of an earlier text
// in knownRewrites, its repair and records the current hash, in one
// transaction per record.
func repairRewrites(ctx context.Context, pool *pgxpool.Pool) error {
	sums, err := fileSums(files)
	if err != nil {
		return err
	}
	for v, rw := range knownRewrites {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var sum string
			err := tx.QueryRow(ctx, `SELECT sha256 FROM invoiced_migration_history WHERE version = $1 FOR UPDATE`, v).Scan(&sum)
			if errors.Is(err, pgx.ErrNoRows) || (err == nil && !knownRewrite(v, sum)) {
				return nil
			} else if err != nil {
				return err
			}
			if rw.repair != "" {
				if _, err := tx.Exec(ctx, rw.repair); err != nil {
					return err
				}
			}
			_, err = tx.Exec(ctx, `UPDATE invoiced_migration_history SET sha256 = $2, file = $3, recorded = 'repaired', recorded_at = now() WHERE version = $1`,
				v, sums[v].sum, sums[v].name)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrations: repair of migration %d's earlier text: %w", v, err)
		}
	}
	return nil
}

// ensureHistory creates the history table if it does not exist and
// records, as adopted, every applied version without a record.
// Processes migrating at once take turns (an advisory lock), since two
// CREATE TABLE IF NOT EXISTS can collide.
func ensureHistory(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('invoiced.migration_history'))`); err != nil {
			return fmt.Errorf("migrations: history: %w", err)
		}
		return adoptHistory(ctx, tx)
	})
}

// adoptHistory is ensureHistory in tx. A version in knownRewrites whose
// earlier text's effect is seen (rewrite.left) is adopted with that
// text's hash, so repairRewrites repairs it. It fails when the table
// cannot be created or a version cannot be read or recorded.
func adoptHistory(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS invoiced_migration_history (
		version bigint PRIMARY KEY,
		file text NOT NULL,
		sha256 text NOT NULL,
		recorded text NOT NULL CHECK (recorded IN ('applied', 'adopted', 'repaired')),
		recorded_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migrations: history: %w", err)
	}
	applied, err := appliedVersions(ctx, tx)
	if err != nil {
		return err
	}
	sums, err := fileSums(files)
	if err != nil {
		return err
	}
	for _, v := range applied {
		f, ok := sums[v]
		if !ok {
			continue // newer than this binary: CheckServable's concern
		}
		sum := f.sum
		if rw := knownRewrites[v]; rw.left != "" {
			var earlier bool
			if err := tx.QueryRow(ctx, rw.left).Scan(&earlier); err != nil {
				return fmt.Errorf("migrations: history: what migration %d left: %w", v, err)
			}
			if earlier {
				sum = rw.sums[0]
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO invoiced_migration_history (version, file, sha256, recorded) VALUES ($1, $2, $3, 'adopted') ON CONFLICT DO NOTHING`,
			v, f.name, sum); err != nil {
			return fmt.Errorf("migrations: history: %w", err)
		}
	}
	return nil
}

// recordApplied records the hash of version's file, just applied.
func recordApplied(ctx context.Context, pool *pgxpool.Pool, version int64, file string) error {
	sums, err := fileSums(files)
	if err != nil {
		return err
	}
	f := sums[version]
	if _, err := pool.Exec(ctx, `INSERT INTO invoiced_migration_history (version, file, sha256, recorded) VALUES ($1, $2, $3, 'applied')
		ON CONFLICT (version) DO UPDATE SET file = EXCLUDED.file, sha256 = EXCLUDED.sha256, recorded = 'applied', recorded_at = now()`,
		version, path.Base(file), f.sum); err != nil {
		return fmt.Errorf("migrations: history: %w", err)
	}
	return nil
}

// checkHistory returns an error naming every applied migration whose
// recorded SHA-256 differs from the file this binary carries (and is not a
// known rewrite); nil when all match or the database has no history yet.
func checkHistory(ctx context.Context, pool *pgxpool.Pool) error {
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('invoiced_migration_history') IS NOT NULL`).Scan(&exists); err != nil {
		return fmt.Errorf("migrations: history: %w", err)
	}
	if !exists {
		return nil
	}
	rows, err := pool.Query(ctx, `SELECT version, file, sha256 FROM invoiced_migration_history ORDER BY version`)
	if err != nil {
		return fmt.Errorf("migrations: history: %w", err)
	}
	type rec struct {
		v         int64
		file, sum string
	}
	var recs []rec
	for rows.Next() {
		var r rec
		if err := rows.Scan(&r.v, &r.file, &r.sum); err != nil {
			rows.Close()
			return fmt.Errorf("migrations: history: %w", err)
		}
		recs = append(recs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("migrations: history: %w", err)
	}
	sums, err := fileSums(files)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range recs {
		f, ok := sums[r.v]
		if !ok || f.sum == r.sum {
			continue
		}
		if knownRewrite(r.v, r.sum) {
			errs = append(errs, fmt.Errorf("migration %s was applied to this database in an earlier released text (sha256 %s; the file now has %s): run invoiced migrate, which repairs it", f.name, r.sum, f.sum))
			continue
		}
		errs = append(errs, fmt.Errorf("migration %s was applied to this database with sha256 %s, but this invoiced carries %s with sha256 %s: an applied migration was edited, so the schema may not be what the file says; deploy the invoiced that applied it, or add a new migration (docs/operations.md, \"Migrations\")",
			r.file, r.sum, f.name, f.sum))
	}
	return errors.Join(errs...)
}

func knownRewrite(version int64, sum string) bool {
	for _, old := range knownRewrites[version].sums {
		if old == sum {
			return true
		}
	}
	return false
}

// appliedVersions returns the versions goose records as applied, none
// when it has no table yet.
func appliedVersions(ctx context.Context, pool db.Querier) ([]int64, error) {
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('goose_db_version') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return nil, err
	}
	rows, err := pool.Query(ctx, `SELECT DISTINCT version_id FROM goose_db_version WHERE is_applied AND version_id > 0 ORDER BY version_id`)
	if err != nil {
		return nil, fmt.Errorf("migrations: history: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

type fileSum struct{ name, sum string }

// fileSums returns each migration's file name and SHA-256 by version.
func fileSums(fsys fs.FS) (map[int64]fileSum, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	out := map[int64]fileSum{}
	for _, name := range names {
		v, err := goose.NumericComponent(name)
		if err != nil {
			return nil, fmt.Errorf("migrations: %s: %w", name, err)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		out[v] = fileSum{strings.TrimSpace(name), hex.EncodeToString(sum[:])}
	}
	return out, nil
}
