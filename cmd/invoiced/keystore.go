package main

import (
	"context"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
)

// keyInfo is what `keys list` shows of an API key: never its secret.
type keyInfo struct {
	Prefix    string
	Scopes    []string
	CreatedAt time.Time
	RevokedAt *time.Time
}

// listKeys returns the API keys of seller sellerID, oldest first. It fails
// only on a database error.
//
// TODO(api owner): this belongs next to CreateKey in api/keystore.go as
// api.Keys; it lives here until that exists so cmd never edits api/.
func listKeys(ctx context.Context, db series.DB, sellerID int64) ([]keyInfo, error) {
	rows, err := db.Query(ctx, `
		SELECT prefix, scopes, created_at, revoked_at
		FROM api_keys WHERE seller_id = $1 ORDER BY id`, sellerID)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[keyInfo])
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return keys, nil
}
