package reports

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/invoiced/invoiced/gst"
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
	StartFY                gst.FY
	FY                     gst.FY
	Serial                 int64
	// Years: the last serial uploaded per year from the lease's start to
	// the year of the forced end (nil for an end recorded before they
	// were: only FY's).
	Years   map[gst.FY]int64
	EndedAt time.Time
}

// years returns the years l's forced end recorded, in order, each with its
// last serial uploaded.
func (l unsettledLease) years() []gst.FY {
	if len(l.Years) == 0 {
		return []gst.FY{l.FY}
	}
	out := make([]gst.FY, 0, len(l.Years))
	for y := range l.Years {
		out = append(out, y)
	}
	slices.Sort(out)
	return out
}

// lastUploaded returns the last serial uploaded in fy when l was ended,
// and whether l recorded it.
func (l unsettledLease) lastUploaded(fy gst.FY) (int64, bool) {
	if len(l.Years) == 0 {
		return l.Serial, fy == l.FY
	}
	n, ok := l.Years[fy]
	return n, ok
}

// unsettledLeases returns the leases ended by force and not settled of the
// seller's series seriesID (0: every series), oldest first.
func unsettledLeases(ctx context.Context, tx pgx.Tx, sellerID, seriesID int64) ([]unsettledLease, error) {
	rows, err := tx.Query(ctx, `SELECT s.code, l.device_id, coalesce(l.end_reason, ''), l.start_fy, l.end_fy, l.end_serial, l.end_years, l.ended_at
		FROM series_leases l JOIN series s ON s.id = l.series_id AND s.seller_id = $1
		WHERE l.seller_id = $1 AND ($2 = 0 OR l.series_id = $2) AND l.end_kind = 'forced' AND l.settled_at IS NULL
		ORDER BY l.id`, sellerID, seriesID)
	if err != nil {
		return nil, fmt.Errorf("reports: leases: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (unsettledLease, error) {
		var l unsettledLease
		var start, fy int
		var years []byte
		if err := r.Scan(&l.Code, &l.DeviceID, &l.Reason, &start, &fy, &l.Serial, &years, &l.EndedAt); err != nil {
			return l, err
		}
		l.StartFY, l.FY = gst.FY(start), gst.FY(fy)
		if len(years) == 0 {
			return l, nil
		}
		var in map[string]int64
		if err := json.Unmarshal(years, &in); err != nil {
			return l, err
		}
		l.Years = map[gst.FY]int64{}
		for k, n := range in {
			y, err := strconv.Atoi(k)
			if err != nil {
				return l, err
			}
			l.Years[gst.FY(y)] = n
		}
		return l, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reports: leases: %w", err)
	}
	return out, nil
}

// message says what l leaves unknown in fy, whose last serial uploaded is
// last.
func (l unsettledLease) message(fy gst.FY, last int64) string {
	return fmt.Sprintf("device %s's lease ended by force at %s (%s) with serial %d of %s uploaded last: the device may have issued serials after %d offline that were never uploaded, until it uploads them or the accountant declares them cancelled",
		l.DeviceID, l.EndedAt.UTC().Format(time.RFC3339), l.Reason, last, fy, last)
}

// addLeaseFindings appends to sum a DeviceNotUploaded finding for every
// unsettled forced end of s whose lease started in or before sum's year
// (the device may have numbered in every year from its start on), which
// then is not intact. The finding is at the serial after the last one
// uploaded when the lease ended, or for a year the end did not record
// (it came later), after the last one stored.
func addLeaseFindings(ctx context.Context, tx pgx.Tx, seller gst.Seller, s gst.Series, fy gst.FY, sum *Summary) error {
	ls, err := unsettledLeases(ctx, tx, seller.ID, s.ID)
	if err != nil {
		return err
	}
	for _, l := range ls {
		if fy < l.StartFY {
			continue
		}
		last, ok := l.lastUploaded(fy)
		if !ok {
			err := tx.QueryRow(ctx, `SELECT coalesce(max(last_serial), 0) FROM series_counters WHERE series_id = $1 AND fy = $2 AND seller_id = $3`,
				s.ID, int(fy), seller.ID).Scan(&last)
			if err != nil {
				return fmt.Errorf("reports: counter: %w", err)
			}
		}
		sum.Findings = append(sum.Findings, Finding{Kind: DeviceNotUploaded, Series: s.Code, FY: fy.String(), Serial: last + 1, Message: l.message(fy, last)})
		sum.Intact = false
	}
	return nil
}

// leaseWarnings returns one Table 13 warning for every unsettled forced
// end of the seller's series and every year it recorded (from the lease's
// start to the end's): the range after its last uploaded serial is
// unknown.
func leaseWarnings(ctx context.Context, tx pgx.Tx, sellerID int64) ([]string, error) {
	ls, err := unsettledLeases(ctx, tx, sellerID, 0)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		for _, y := range l.years() {
			last, _ := l.lastUploaded(y)
			out = append(out, fmt.Sprintf("series %s %s: %s", l.Code, y, l.message(y, last)))
		}
	}
	return out, nil
}
