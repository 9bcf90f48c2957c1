package reports

import (
	"context"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
)

// DeviceNotUploaded is the finding of a lease of the series ended by force (a lost device)
// at serial Serial, and the device may have issued serials after it
// offline that were never uploaded; it stays until the device uploads
// late and ends its lease, or the accountant declares the range cancelled
// (docs/offline.md).
const DeviceNotUploaded FindingKind = "device_not_uploaded"

// unsettledLease is a lease ended by force and not settled.
type unsettledLease struct {
	Code, DeviceID, Reason string
	FY                     series.FY
	Serial                 int64
	EndedAt                time.Time
}

// unsettledLeases returns the leases ended by force and not settled of the
// seller's series seriesID (0: every series), oldest first.
func unsettledLeases(ctx context.Context, tx pgx.Tx, sellerID, seriesID int64) ([]unsettledLease, error) {
	rows, err := tx.Query(ctx, `SELECT s.code, l.device_id, coalesce(l.end_reason, ''), l.end_fy, l.end_serial, l.ended_at
		FROM series_leases l JOIN series s ON s.id = l.series_id AND s.seller_id = $1
		WHERE l.seller_id = $1 AND ($2 = 0 OR l.series_id = $2) AND l.end_kind = 'forced' AND l.settled_at IS NULL
		ORDER BY l.id`, sellerID, seriesID)
	if err != nil {
		return nil, fmt.Errorf("reports: leases: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (unsettledLease, error) {
		var l unsettledLease
		var fy int
		err := r.Scan(&l.Code, &l.DeviceID, &l.Reason, &fy, &l.Serial, &l.EndedAt)
		l.FY = series.FY(fy)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("reports: leases: %w", err)
	}
	return out, nil
}

func (l unsettledLease) message() string {
	return fmt.Sprintf("device %s's lease ended by force at %s (%s) with serial %d of %s uploaded last: the device may have issued serials after %d offline that were never uploaded, until it uploads them or the accountant declares them cancelled",
		l.DeviceID, l.EndedAt.UTC().Format(time.RFC3339), l.Reason, l.Serial, l.FY, l.Serial)
}

// addLeaseFindings appends to sum a DeviceNotUploaded finding for every
// unsettled forced end of s in sum's year, which then is not intact.
func addLeaseFindings(ctx context.Context, tx pgx.Tx, seller series.Seller, s series.Series, fy series.FY, sum *Summary) error {
	ls, err := unsettledLeases(ctx, tx, seller.ID, s.ID)
	if err != nil {
		return err
	}
	for _, l := range ls {
		if l.FY != fy {
			continue
		}
		sum.Findings = append(sum.Findings, Finding{Kind: DeviceNotUploaded, Series: s.Code, FY: fy.String(), Serial: l.Serial + 1, Message: l.message()})
		sum.Intact = false
	}
	return nil
}

// leaseWarnings returns one Table 13 warning for every unsettled forced
// end of the seller's series: the range after its last uploaded serial is
// unknown.
func leaseWarnings(ctx context.Context, tx pgx.Tx, sellerID int64) ([]string, error) {
	ls, err := unsettledLeases(ctx, tx, sellerID, 0)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, fmt.Sprintf("series %s %s: %s", l.Code, l.FY, l.message()))
	}
	return out, nil
}
