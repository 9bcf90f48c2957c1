package invoice

import (
	"context"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/db"
)

// GetByPublicID returns the invoice whose public id is publicID, or
// ErrNotFound (also for a malformed id, which is not looked up). A routed
// id is looked up with its seller, through the unique index of routed ids
// (public_id, seller_id): on Citus, distributed by seller, one shard
// answers. A legacy id names no seller; it is found through the index
// that holds legacy ids only (docs/public-ids.md). The length conditions
// name each index's predicate, so that the planner may use it.
func GetByPublicID(ctx context.Context, q db.Querier, publicID string) (document.Invoice, error) {
	route, ok := document.ParsePublicID(publicID)
	switch {
	case !ok:
		return document.Invoice{}, ErrNotFound
	case route.Legacy():
		return one(q.QueryRow(ctx, `SELECT `+readCols("i.seller_id")+readFrom+
			`WHERE i.public_id = $1 AND length(i.public_id) = 26`, publicID), "get invoice")
	}
	return one(q.QueryRow(ctx, `SELECT `+readCols("$1")+readFrom+
		`WHERE i.seller_id = $1 AND i.public_id = $2 AND length(i.public_id) > 26`, route.SellerID, publicID), "get invoice")
}
