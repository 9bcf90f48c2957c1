package console

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
)

// This file holds the package's SQL: the sessions.

// sessionRow is a stored session.
type sessionRow struct {
	SellerID  int64
	KeyPrefix string
	CSRF      string
	CreatedAt time.Time
	LastSeen  time.Time
}

// insertSession stores a new session under idHash.
func insertSession(ctx context.Context, q db.Querier, idHash []byte, r sessionRow) error {
	_, err := q.Exec(ctx, `
		INSERT INTO console_sessions (id_hash, seller_id, key_prefix, csrf_token, created_at, last_seen_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, idHash, r.SellerID, r.KeyPrefix, r.CSRF, r.CreatedAt, r.LastSeen)
	if err != nil {
		return fmt.Errorf("console: create session: %w", err)
	}
	return nil
}

// liveSession returns the session stored under idHash when it was used
// after idleSince and created after createdSince; found is false otherwise.
func liveSession(ctx context.Context, q db.Querier, idHash []byte, idleSince, createdSince time.Time) (sessionRow, bool, error) {
	var r sessionRow
	err := q.QueryRow(ctx, `
		SELECT seller_id, key_prefix, csrf_token, created_at, last_seen_at FROM console_sessions
		WHERE id_hash = $1 AND last_seen_at > $2 AND created_at > $3`, idHash, idleSince, createdSince).
		Scan(&r.SellerID, &r.KeyPrefix, &r.CSRF, &r.CreatedAt, &r.LastSeen)
	if errors.Is(err, pgx.ErrNoRows) {
		return sessionRow{}, false, nil
	}
	if err != nil {
		return sessionRow{}, false, fmt.Errorf("console: read session: %w", err)
	}
	return r, true, nil
}

// touchSession records a use of the session at now.
func touchSession(ctx context.Context, q db.Querier, idHash []byte, now time.Time) error {
	if _, err := q.Exec(ctx, `UPDATE console_sessions SET last_seen_at = $2 WHERE id_hash = $1`, idHash, now); err != nil {
		return fmt.Errorf("console: touch session: %w", err)
	}
	return nil
}

// deleteSession removes the session stored under idHash (nothing when there
// is none).
func deleteSession(ctx context.Context, q db.Querier, idHash []byte) error {
	if _, err := q.Exec(ctx, `DELETE FROM console_sessions WHERE id_hash = $1`, idHash); err != nil {
		return fmt.Errorf("console: delete session: %w", err)
	}
	return nil
}

// purgeSessions removes the sessions created before createdBefore or last
// used before idleBefore and returns how many.
func purgeSessions(ctx context.Context, q db.Querier, idleBefore, createdBefore time.Time) (int64, error) {
	tag, err := q.Exec(ctx, `DELETE FROM console_sessions WHERE last_seen_at <= $1 OR created_at <= $2`, idleBefore, createdBefore)
	if err != nil {
		return 0, fmt.Errorf("console: purge sessions: %w", err)
	}
	return tag.RowsAffected(), nil
}
