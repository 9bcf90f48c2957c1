package series

import (
	"context"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL that reads settlements' declarations.

// DeclarationsOf returns the declarations of series-year (s, fy) in chain
// position order (Hash not set: the record's is read with the chain). It
// fails only when the database fails.
func DeclarationsOf(ctx context.Context, q db.Querier, s gst.Series, fy gst.FY) ([]Declaration, error) {
	rows, err := q.Query(ctx, `SELECT position, first_serial, last_serial, lease_id, device_id, declared_at, declared_on, declared_by, reason
		FROM serial_declarations WHERE seller_id = $1 AND series_id = $2 AND fy = $3 ORDER BY position`, s.SellerID, s.ID, int(fy))
	if err != nil {
		return nil, translate(err, "read declarations")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Declaration, error) {
		d := Declaration{FY: fy}
		err := r.Scan(&d.Position, &d.First, &d.Last, &d.LeaseID, &d.DeviceID, &d.DeclaredAt, &d.DeclaredOn, &d.DeclaredBy, &d.Reason)
		if err != nil {
			return d, err
		}
		if d.FirstNumber, err = s.Format.Render(fy, d.First); err != nil {
			return d, err
		}
		d.LastNumber, err = s.Format.Render(fy, d.Last)
		return d, err
	})
	return out, translate(err, "read declarations")
}
