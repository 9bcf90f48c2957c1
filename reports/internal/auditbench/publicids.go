package main

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"io"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// legacyIDs spells the public ids issued before routed ones: 128 random
// bits as 26 lower-case RFC 4648 base32 characters.
var legacyIDs = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// idForm makes the public id of the i-th invoice, of seller, issued at.
type idForm struct {
	name, index string // table pubid_<name>; the columns of its unique index
	make        func(seller int64, at time.Time) string
}

var idForms = []idForm{
	{"legacy", "public_id", func(int64, time.Time) string {
		var b [16]byte
		rand.Read(b[:])
		return legacyIDs.EncodeToString(b[:])
	}},
	{"routed", "public_id, seller_id", document.NewPublicID},
}

// measurePublicIDs compares the unique index of each public id form in a
// scratch table pubid_<form> (seller_id, public_id), in the database
// behind pool: it loads n ids (of sellers sellers in turn, issued 10 ms
// apart), then inserts issue more in transactions of 100, as issuing
// does, and writes the index's size and the blocks that phase read and
// found in shared buffers (pg_statio_user_indexes). The tables are left
// for inspection and dropped by the next run.
func measurePublicIDs(ctx context.Context, pool *pgxpool.Pool, n, issue, sellers int, w io.Writer) error {
	base := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * 10 * time.Millisecond) }
	for _, f := range idForms {
		table := "pubid_" + f.name
		if _, err := pool.Exec(ctx, fmt.Sprintf(`DROP TABLE IF EXISTS %[1]s;
			CREATE TABLE %[1]s (seller_id bigint NOT NULL, public_id text NOT NULL);
			CREATE UNIQUE INDEX %[1]s_key ON %[1]s (%[2]s)`, table, f.index)); err != nil {
			return err
		}
		i := 0
		if _, err := pool.CopyFrom(ctx, pgx.Identifier{table}, []string{"seller_id", "public_id"}, pgx.CopyFromFunc(func() ([]any, error) {
			if i == n {
				return nil, nil
			}
			seller := int64(i%sellers + 1)
			i++
			return []any{seller, f.make(seller, at(i))}, nil
		})); err != nil {
			return fmt.Errorf("%s: load: %w", table, err)
		}
		if _, err := pool.Exec(ctx, `CHECKPOINT`); err != nil {
			return err
		}
		var loaded int64
		if err := pool.QueryRow(ctx, `SELECT pg_relation_size($1::regclass)`, table+"_key").Scan(&loaded); err != nil {
			return err
		}
		read0, hit0, err := indexBlocks(ctx, pool, table+"_key")
		if err != nil {
			return err
		}
		start := time.Now()
		for done := 0; done < issue; done += 100 {
			sel, ids := make([]int64, 0, 100), make([]string, 0, 100)
			for k := done; k < min(done+100, issue); k++ {
				s := int64((n+k)%sellers + 1)
				sel, ids = append(sel, s), append(ids, f.make(s, at(n+k)))
			}
			if _, err := pool.Exec(ctx, `INSERT INTO `+table+` SELECT * FROM unnest($1::bigint[], $2::text[])`, sel, ids); err != nil {
				return fmt.Errorf("%s: issue: %w", table, err)
			}
		}
		elapsed := time.Since(start)
		// Index statistics reach the shared counters when a backend's
		// transaction ends and at most a second later when it is idle.
		time.Sleep(1500 * time.Millisecond)
		read1, hit1, err := indexBlocks(ctx, pool, table+"_key")
		if err != nil {
			return err
		}
		var size int64
		if err := pool.QueryRow(ctx, `SELECT pg_relation_size($1::regclass)`, table+"_key").Scan(&size); err != nil {
			return err
		}
		fmt.Fprintf(w, "%-7s index (%s): %d ids %.1f MB; %d more ids in %s: %d blocks read, %d hit; then %.1f MB\n",
			f.name, f.index, n, float64(loaded)/(1<<20), issue, elapsed.Round(time.Millisecond), read1-read0, hit1-hit0, float64(size)/(1<<20))
	}
	return nil
}

// indexBlocks returns the blocks of index read and found in shared
// buffers so far.
func indexBlocks(ctx context.Context, pool *pgxpool.Pool, index string) (read, hit int64, err error) {
	err = pool.QueryRow(ctx, `SELECT coalesce(idx_blks_read, 0), coalesce(idx_blks_hit, 0) FROM pg_statio_user_indexes WHERE indexrelname = $1`, index).Scan(&read, &hit)
	return read, hit, err
}
