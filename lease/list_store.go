package lease

import (
	"context"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL of the console's leases page: the leases of all
// of a seller's series at once.

// SellerLeases returns the leases that hold a series of seller sellerID
// (in force, or ended by force and not settled), oldest first, and the
// last recent leases of its series that no longer do, newest first. Each
// read goes through the leases' indexes by series (the holder's partial
// index, and (series_id, id)), so it costs the seller's series and what
// it returns. It fails only when the database fails.
func SellerLeases(ctx context.Context, q db.Querier, sellerID int64, recent int) (holding, past []Lease, err error) {
	collect := func(sql string, args ...any) ([]Lease, error) {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return nil, translate(err, "list leases")
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Lease, error) { return scanLease(r) })
		return out, translate(err, "list leases")
	}
	const mine = ` FROM series_leases WHERE seller_id = $1 AND series_id IN (SELECT id FROM series WHERE seller_id = $1)`
	if holding, err = collect(`SELECT `+leaseCols+mine+` AND settled_at IS NULL ORDER BY id`, sellerID); err != nil {
		return nil, nil, err
	}
	if past, err = collect(`SELECT `+leaseCols+mine+` AND settled_at IS NOT NULL ORDER BY id DESC LIMIT $2`, sellerID, recent); err != nil {
		return nil, nil, err
	}
	return holding, past, nil
}
