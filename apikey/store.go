package apikey

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/sellers"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL of API keys.

var errPrefixTaken = errors.New("apikey: key prefix taken")

// insertKey stores a key; with seriesCodes, its scopes go to
// series_scopes and scopes stays empty (so that binaries older than the
// series_scopes column refuse such a key everything rather than grant it
// every series). It fails with errPrefixTaken when prefix is in use,
// sellers.ErrNotFound when there is no such seller, and with the
// database's error otherwise.
func insertKey(ctx context.Context, q db.Querier, sellerID int64, prefix string, secretHash []byte, scopes, seriesCodes []string) error {
	plain, restricted := scopes, []string(nil)
	if seriesCodes != nil {
		plain, restricted = []string{}, scopes
	}
	_, err := q.Exec(ctx, `
		INSERT INTO api_keys (seller_id, prefix, secret_hash, scopes, series_scopes, series_codes)
		VALUES ($1, $2, $3, $4, $5, $6)`, sellerID, prefix, secretHash, plain, restricted, seriesCodes)
	if v, ok := db.Violated(err); ok {
		switch v.Code {
		case pgerrcode.UniqueViolation:
			return errPrefixTaken
		case pgerrcode.ForeignKeyViolation:
			return sellers.ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("apikey: create key: %w", err)
	}
	return nil
}

// revokeKey marks the live key with prefix revoked. It fails with
// ErrKeyNotFound when there is none, and with the database's error
// otherwise.
func revokeKey(ctx context.Context, q db.Querier, prefix string) error {
	tag, err := q.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE prefix = $1 AND revoked_at IS NULL`, prefix)
	if err != nil {
		return fmt.Errorf("apikey: revoke key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrKeyNotFound
	}
	return nil
}

// Row is a stored key as Authenticate checks it: its seller, the hash of
// its secret, its scopes and series, and whether it is revoked. Callers
// may keep Rows (a cache) but only this package reads them.
type Row struct {
	seller     gst.Seller
	secretHash []byte
	scopes     Scopes
	series     []string // nil: every series of the seller
	revoked    bool
}

// Lookup returns the key with prefix and its seller, found false when
// there is none. The query answers one row either way (NULLs for an
// unknown prefix), so that a known and an unknown prefix cost the
// database, the wire and the scan nearly the same. It fails only on a
// database error.
func Lookup(ctx context.Context, q db.Querier, prefix string) (row Row, found bool, err error) {
	var r Row
	var scopes []string
	var revoked *bool
	var sellerID *int64
	var gstin, name, state *string
	var created *time.Time
	var eInvoicing *bool
	err = q.QueryRow(ctx, `
		SELECT k.secret_hash, coalesce(k.series_scopes, k.scopes), k.series_codes, k.revoked_at IS NOT NULL,
		       s.id, s.gstin, s.name, s.state_code, s.created_at, s.e_invoicing
		FROM (VALUES ($1::text)) AS q (prefix)
		LEFT JOIN api_keys k ON k.prefix = q.prefix
		LEFT JOIN sellers s ON s.id = k.seller_id`, prefix).Scan(&r.secretHash, &scopes, &r.series, &revoked,
		&sellerID, &gstin, &name, &state, &created, &eInvoicing)
	if err != nil {
		return Row{}, false, fmt.Errorf("apikey: look up key: %w", err)
	}
	if r.secretHash == nil || sellerID == nil {
		return Row{}, false, nil
	}
	r.scopes = scopesOf(scopes)
	r.revoked = *revoked
	r.seller = gst.Seller{ID: *sellerID, GSTIN: gst.GSTIN(*gstin), Name: *name, StateCode: *state, CreatedAt: *created,
		EInvoicing: *eInvoicing}
	return r, true, nil
}

// Info is what may be shown of an API key: never its secret.
type Info struct {
	Prefix    string
	Scopes    []string
	Series    []string // nil: every series of the seller
	CreatedAt time.Time
	RevokedAt *time.Time
}

// List returns the API keys of seller sellerID, oldest first. It fails
// only on a database error.
func List(ctx context.Context, q db.Querier, sellerID int64) ([]Info, error) {
	rows, err := q.Query(ctx, `
		SELECT prefix, coalesce(series_scopes, scopes), series_codes, created_at, revoked_at
		FROM api_keys WHERE seller_id = $1 ORDER BY id`, sellerID)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Info])
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return keys, nil
}
