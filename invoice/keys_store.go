package invoice

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL of idempotency keys: their locks, their lookup
// and their purge.

// queueRequireKeyLocks queues on b the advisory lock of every key (see
// ClaimKeys) as a requirement: the transaction aborts unless each is had.
// Whether a key was used before is not read here: the key's insert, later
// in the same transaction, fails on the unique index if so. That costs a
// replay (rare: a client retrying after a lost answer) the inserts before
// the failure, and saves every batch a statement that looked up each of
// its keys.
func queueRequireKeyLocks(b *pgx.Batch, claims []KeyClaim) {
	b.Queue(`SELECT invoiced_require(bool_and(pg_try_advisory_xact_lock(hashtextextended(k, 0))), $2, 'an idempotency key is held by another transaction')
		FROM unnest($1::text[]) AS u(k)`, lockNames(claims), db.CodeKeyHeld)
}

// keyLockName names the advisory lock of a seller's idempotency key.
func keyLockName(sellerID int64, key string) string {
	return strconv.FormatInt(sellerID, 10) + "/" + key
}

// lockNames returns the name of each claim's advisory lock (keyLockName).
func lockNames(claims []KeyClaim) []string {
	names := make([]string, len(claims))
	for i, c := range claims {
		names[i] = keyLockName(c.SellerID, c.Key)
	}
	return names
}

// ClaimKey looks up an Idempotency-Key inside tx before a request is served.
// It returns the id of the invoice the key already answered for when
// requestHash matches (the caller replays it), 0 when the key is new (the
// caller proceeds and records it with IssueTx; a transaction-scoped
// advisory lock keeps a concurrent request with the same key out until tx
// ends), ErrKeyInProgress when another transaction holds the key, and
// ErrKeyReused when the key answered a different request.
func ClaimKey(ctx context.Context, tx pgx.Tx, sellerID int64, key string, requestHash []byte) (int64, error) {
	out, err := ClaimKeys(ctx, tx, []KeyClaim{{SellerID: sellerID, Key: key, RequestHash: requestHash}})
	if err != nil {
		return 0, err
	}
	return out[0].InvoiceID, out[0].Err
}

// PurgeKeys deletes idempotency keys recorded before cutoff, at most batch
// of them per statement (each statement its own short transaction, so a
// large backlog never holds many row locks, a long snapshot or a big WAL
// burst at once), until none is left; batch below 1 means 1000. It
// returns how many it deleted, also when it fails part way (ctx ended or
// the database failed).
func PurgeKeys(ctx context.Context, q db.Querier, cutoff time.Time, batch int) (int64, error) {
	if batch < 1 {
		batch = 1000
	}
	var total int64
	for {
		tag, err := q.Exec(ctx, `DELETE FROM idempotency_keys WHERE (seller_id, key) IN (
			SELECT seller_id, key FROM idempotency_keys WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, batch)
		if err != nil {
			return total, translate(err, "purge idempotency keys")
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}

// KeyClaim is one idempotency key of a seller to claim.
type KeyClaim struct {
	SellerID    int64
	Key         string
	RequestHash []byte
}

// KeyOutcome is what ClaimKeys found for one key: InvoiceID of the invoice
// to replay, 0 for a fresh key (now held by tx), or Err (ErrKeyInProgress,
// ErrKeyReused).
type KeyOutcome struct {
	InvoiceID int64
	Err       error
}

// ClaimKeys claims several distinct (seller, key) pairs in one round trip
// of two statements, whatever their number; see ClaimKey. It returns one
// outcome per claim, in order, and an error only when the database fails.
func ClaimKeys(ctx context.Context, tx pgx.Tx, claims []KeyClaim) ([]KeyOutcome, error) {
	out, _, err := claimKeys(ctx, tx, claims)
	return out, err
}

// claimKeys is ClaimKeys that also returns the database's clock, read
// after the keys' locks were taken.
func claimKeys(ctx context.Context, tx pgx.Tx, claims []KeyClaim) ([]KeyOutcome, time.Time, error) {
	out := make([]KeyOutcome, len(claims))
	var dbNow time.Time
	lockKeys := lockNames(claims)
	sellers, keys := make([]int64, len(claims)), make([]string, len(claims))
	for i, c := range claims {
		sellers[i], keys[i] = c.SellerID, c.Key
	}
	locked := make([]bool, 0, len(claims))
	type stored struct {
		hash []byte
		id   int64
	}
	type sellerKey struct {
		seller int64
		key    string
	}
	found := map[sellerKey]stored{}
	batch := &pgx.Batch{}
	batch.Queue(`SELECT pg_try_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest($1::text[]) WITH ORDINALITY AS u(k, n) ORDER BY n`,
		lockKeys).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var ok bool
			if err := rows.Scan(&ok); err != nil {
				return err
			}
			locked = append(locked, ok)
		}
		return rows.Err()
	})
	// A separate statement, so its snapshot is taken after the locks.
	batch.Queue(`SELECT i.seller_id, i.key, i.request_hash, i.invoice_id
		FROM idempotency_keys i JOIN unnest($1::bigint[], $2::text[]) AS u(seller_id, key)
		ON i.seller_id = u.seller_id AND i.key = u.key
		WHERE i.seller_id = ANY ($1::bigint[])`, sellers, keys).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var k sellerKey
				var st stored
				if err := rows.Scan(&k.seller, &k.key, &st.hash, &st.id); err != nil {
					return err
				}
				found[k] = st
			}
			return rows.Err()
		})
	batch.Queue(`SELECT clock_timestamp()`).QueryRow(func(row pgx.Row) error { return row.Scan(&dbNow) })
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return nil, time.Time{}, translate(err, "claim idempotency keys")
	}
	if len(locked) != len(claims) {
		return nil, time.Time{}, fmt.Errorf("invoice: claim idempotency keys: %d locks for %d keys", len(locked), len(claims))
	}
	for i, c := range claims {
		st, ok := found[sellerKey{c.SellerID, c.Key}]
		switch {
		case !locked[i]:
			out[i].Err = ErrKeyInProgress
		case !ok:
		case !bytes.Equal(st.hash, c.RequestHash):
			out[i].Err = ErrKeyReused
		default:
			out[i].InvoiceID = st.id
		}
	}
	return out, dbNow, nil
}
