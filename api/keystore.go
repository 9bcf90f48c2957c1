package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// This file holds the SQL of API keys.

var errPrefixTaken = errors.New("api: key prefix taken")

// insertKey stores a key; with seriesCodes, its scopes go to
// series_scopes and scopes stays empty (migration 00013: older binaries
// then refuse the key everything).
func insertKey(ctx context.Context, db series.DB, sellerID int64, prefix string, secretHash []byte, scopes, seriesCodes []string) error {
	plain, restricted := scopes, []string(nil)
	if seriesCodes != nil {
		plain, restricted = []string{}, scopes
	}
	_, err := db.Exec(ctx, `
		INSERT INTO api_keys (seller_id, prefix, secret_hash, scopes, series_scopes, series_codes)
		VALUES ($1, $2, $3, $4, $5, $6)`, sellerID, prefix, secretHash, plain, restricted, seriesCodes)
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case pgerrcode.UniqueViolation:
			return errPrefixTaken
		case pgerrcode.ForeignKeyViolation:
			return series.ErrSellerNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("api: create key: %w", err)
	}
	return nil
}

func revokeKey(ctx context.Context, db series.DB, prefix string) error {
	tag, err := db.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE prefix = $1 AND revoked_at IS NULL`, prefix)
	if err != nil {
		return fmt.Errorf("api: revoke key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrKeyNotFound
	}
	return nil
}

type keyRow struct {
	seller      series.Seller
	secretHash  []byte
	scopes      []string
	seriesCodes []string // nil: every series of the seller
	revoked     bool
}

// lookupKey returns the key with prefix and its seller, found false when
// there is none. The query answers one row either way (NULLs for an
// unknown prefix), so that a known and an unknown prefix cost the
// database, the wire and the scan nearly the same.
func lookupKey(ctx context.Context, db series.DB, prefix string) (keyRow, bool, error) {
	var r keyRow
	var revoked *bool
	var sellerID *int64
	var gstin, name, state *string
	var created *time.Time
	err := db.QueryRow(ctx, `
		SELECT k.secret_hash, coalesce(k.series_scopes, k.scopes), k.series_codes, k.revoked_at IS NOT NULL,
		       s.id, s.gstin, s.name, s.state_code, s.created_at
		FROM (VALUES ($1::text)) AS q (prefix)
		LEFT JOIN api_keys k ON k.prefix = q.prefix
		LEFT JOIN sellers s ON s.id = k.seller_id`, prefix).Scan(&r.secretHash, &r.scopes, &r.seriesCodes, &revoked,
		&sellerID, &gstin, &name, &state, &created)
	if err != nil {
		return keyRow{}, false, fmt.Errorf("api: look up key: %w", err)
	}
	if r.secretHash == nil || sellerID == nil {
		return keyRow{}, false, nil
	}
	r.revoked = *revoked
	r.seller = series.Seller{ID: *sellerID, GSTIN: series.GSTIN(*gstin), Name: *name, StateCode: *state, CreatedAt: *created}
	return r, true, nil
}

// KeyInfo is what may be shown of an API key: never its secret.
type KeyInfo struct {
	Prefix    string
	Scopes    []string
	Series    []string // nil: every series of the seller
	CreatedAt time.Time
	RevokedAt *time.Time
}

// Keys returns the API keys of seller sellerID, oldest first. It fails only
// on a database error.
func Keys(ctx context.Context, db series.DB, sellerID int64) ([]KeyInfo, error) {
	rows, err := db.Query(ctx, `
		SELECT prefix, coalesce(series_scopes, scopes), series_codes, created_at, revoked_at
		FROM api_keys WHERE seller_id = $1 ORDER BY id`, sellerID)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[KeyInfo])
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return keys, nil
}
