package series

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL of a lease's end: the device's end and its
// resumption (ResumeLease), the end by force of a lost device's lease, and
// its settlement.

// EndLeaseByDevice ends lease leaseID of s as its device asks: the
// device's last serial in fy is last, and every serial up to it must be
// stored. A lease ended by force is settled the same way once its device
// has uploaded late (declaring, for each earlier year since the lease's
// start, the last serial stored). The end is idempotent: the same fy and
// last on a lease this device already ended answer the lease as that end
// left it, so a device whose answer was lost learns the outcome by asking
// again. It returns the ended lease; ErrLeaseNotFound, ErrLeaseNotHeld
// (the lease ended otherwise), ErrNotUploaded (with the serial stored
// last) when the series-year's counter is behind last, ErrInvalidLease
// when it is ahead (the device claims fewer invoices than were stored),
// and db.ErrOutcomeUnknown when the COMMIT's answer was lost. With epoch
// (not nil) the end is the one the device asked for at that end epoch: it
// returns ErrEndSuperseded, and ends nothing, when the lease still holds
// and its epoch has moved on (the device resumed after asking, see
// ResumeLease).
func EndLeaseByDevice(ctx context.Context, b db.Beginner, s gst.Series, leaseID string, fy gst.FY, last int64, epoch *int64, now time.Time) (Lease, error) {
	if !fy.Valid() || last < 0 {
		return Lease{}, apperr.Errorf(ErrInvalidLease, "fy and last_serial must name a series-year and a serial")
	}
	var l Lease
	err := db.InTx(ctx, b, func(tx pgx.Tx) error {
		var err error
		if l, err = lockLease(ctx, tx, s, leaseID); err != nil {
			return err
		}
		if !l.Holds() {
			if l.endedByDevice(fy, last) {
				return nil // answered before: the same answer again
			}
			return apperr.Errorf(ErrLeaseNotHeld, "lease %s of device %s ended at %s", l.ID, l.DeviceID, l.EndedAt.UTC().Format(time.RFC3339))
		}
		if epoch != nil && *epoch != l.EndEpoch {
			// Sent before the device resumed (and sold on): ending the
			// lease now would free serials the device has printed since.
			return apperr.Errorf(ErrEndSuperseded, "this end was asked at end_epoch %d; device %s resumed the lease since (end_epoch %d)", *epoch, l.DeviceID, l.EndEpoch)
		}
		p, err := position(ctx, tx, s, fy)
		if err != nil {
			return err
		}
		switch stored := p.Serial - 1; {
		case stored < last:
			return apperr.Errorf(ErrNotUploaded, "series %s %s holds serials up to %d; upload %d to %d before ending the lease", s.Code, fy, stored, stored+1, last)
		case stored > last:
			return apperr.Errorf(ErrInvalidLease, "series %s %s holds serials up to %d, beyond last_serial %d", s.Code, fy, stored, last)
		}
		declared := map[gst.FY]int64{fy: last}
		for _, y := range l.YearsThrough(fy - 1) {
			if y >= fy {
				break
			}
			p, err := position(ctx, tx, s, y)
			if err != nil {
				return err
			}
			declared[y] = p.Serial - 1
		}
		at := now.UTC().Truncate(time.Microsecond)
		by := "device " + l.DeviceID
		if l.EndedAt == nil {
			l.EndedAt, l.EndKind, l.EndedBy, l.EndFY, l.EndSerial = &at, EndByDevice, by, fy, last
			l.SettledAt, l.SettledBy, l.DeclaredThrough = &at, by, last
		} else {
			l.SettledAt, l.SettledBy, l.SettleReason, l.DeclaredThrough = &at, by, fmt.Sprintf("uploaded late through serial %d of %s", last, fy), last
		}
		l.DeclaredYears = declared
		_, err = tx.Exec(ctx, `UPDATE series_leases SET ended_at = $2, end_kind = $3, ended_by = $4, end_fy = $5, end_serial = $6,
			settled_at = $7, settled_by = $8, settle_reason = $9, declared_through = $10, declared_years = $12 WHERE lease_id = $1 AND seller_id = $11`,
			l.ID, l.EndedAt, l.EndKind, l.EndedBy, int(l.EndFY), l.EndSerial, l.SettledAt, l.SettledBy, nullable(l.SettleReason), l.DeclaredThrough, s.SellerID, yearsJSON(declared))
		return translate(err, "end lease")
	})
	if err != nil {
		return Lease{}, leaseTxFailed(err)
	}
	return l, nil
}

// ResumeLease is the device's resume after an end whose outcome it could
// not learn: under lease leaseID's row lock it returns the lease as it
// stands, and when it is in force (not ended) first moves its end epoch
// on, so that every end the device asked for before (and that may still
// be in flight) is refused (ErrEndSuperseded) and the device may sell on.
// An ended lease is returned unchanged: the device learns the end. It
// returns ErrLeaseNotFound for a lease of another series or none, and
// db.ErrOutcomeUnknown when the COMMIT's answer was lost (a resume again
// is harmless: it only moves the epoch on once more).
func ResumeLease(ctx context.Context, b db.Beginner, s gst.Series, leaseID string) (Lease, error) {
	var l Lease
	err := db.InTx(ctx, b, func(tx pgx.Tx) error {
		var err error
		if l, err = lockLease(ctx, tx, s, leaseID); err != nil || l.EndedAt != nil {
			return err
		}
		err = tx.QueryRow(ctx, `UPDATE series_leases SET end_epoch = end_epoch + 1 WHERE lease_id = $1 AND seller_id = $2 RETURNING end_epoch`,
			l.ID, s.SellerID).Scan(&l.EndEpoch)
		return translate(err, "resume lease")
	})
	if err != nil {
		return Lease{}, leaseTxFailed(err)
	}
	return l, nil
}

// endedByDevice reports whether l was ended (or settled) by its own
// device with last as the last serial of fy.
func (l Lease) endedByDevice(fy gst.FY, last int64) bool {
	if l.SettledAt == nil || l.SettledBy != "device "+l.DeviceID {
		return false
	}
	if l.DeclaredYears != nil {
		n, ok := l.DeclaredYears[fy]
		return ok && n == last && l.DeclaredThrough == last
	}
	return l.EndKind == EndByDevice && l.EndFY == fy && l.EndSerial == last
}

// ForceEndLease ends the lease held on s, for a lost device, recording the
// last serial uploaded (of the latest series-year the series numbered),
// and in EndYears the last one of each year from the lease's start to
// the year of the server's tomorrow (a till whose clock runs ahead numbers in the
// new year before the server's midnight).
// The series stays held until the lease is settled (SettleLease, or the
// device's late upload and EndLeaseByDevice): until then the audit lists
// the serials the device may have issued and never uploaded. It returns
// ErrInvalidLease without a reason and ErrLeaseNotFound when no lease is
// in force (one already ended by force is settled with SettleLease), and
// db.ErrOutcomeUnknown when the COMMIT's answer was lost.
func ForceEndLease(ctx context.Context, b db.Beginner, s gst.Series, reason, by string, now time.Time) (Lease, error) {
	reason = strings.TrimSpace(reason)
	if err := checkReason(reason); err != nil {
		return Lease{}, err
	}
	var l Lease
	err := db.InTx(ctx, b, func(tx pgx.Tx) error {
		held, err := holder(ctx, tx, s)
		if err != nil {
			return err
		}
		if held == nil || held.EndedAt != nil {
			return apperr.Errorf(ErrLeaseNotFound, "series %s has no lease in force", s.Code)
		}
		if l, err = LockLeaseTx(ctx, tx, s, held.ID); err != nil {
			return err
		}
		fy, last := l.Next.FY, l.Next.Serial-1
		err = tx.QueryRow(ctx, `SELECT fy, last_serial FROM series_counters WHERE series_id = $1 AND fy >= $2 AND seller_id = $3 ORDER BY fy DESC LIMIT 1`,
			s.ID, int(l.Next.FY), s.SellerID).Scan(&fy, &last)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return translate(err, "read counter")
		}
		// Every year from the lease's start to the year of the server's
		// tomorrow (the latest invoice date an upload is accepted with: a
		// till whose clock runs ahead numbers in the new year before the
		// server's midnight): the device may have numbered in each,
		// whether or not anything of it was uploaded.
		years := map[gst.FY]int64{}
		for _, y := range l.YearsThrough(max(lastYear(now), fy)) {
			p, err := position(ctx, tx, s, y)
			if err != nil {
				return err
			}
			years[y] = p.Serial - 1
		}
		at := now.UTC().Truncate(time.Microsecond)
		l.EndedAt, l.EndKind, l.EndedBy, l.EndReason, l.EndFY, l.EndSerial, l.EndYears = &at, EndForced, by, reason, fy, last, years
		_, err = tx.Exec(ctx, `UPDATE series_leases SET ended_at = $2, end_kind = 'forced', ended_by = $3, end_reason = $4, end_fy = $5, end_serial = $6, end_years = $8
			WHERE lease_id = $1 AND seller_id = $7`, l.ID, at, by, reason, int(fy), last, s.SellerID, yearsJSON(years))
		return translate(err, "force lease end")
	})
	if err != nil {
		return Lease{}, leaseTxFailed(err)
	}
	return l, nil
}

// SettleLease settles, as SettleLeaseYears, a lease of s ended by force
// whose years (from its start to the year of the server's tomorrow) are
// one: through is the last
// serial the device may have issued in it. A lease spanning several years
// is refused with ErrLeaseYearsUndeclared: settle it with
// SettleLeaseYears.
func SettleLease(ctx context.Context, b db.Beginner, s gst.Series, through int64, reason, by string, now time.Time) (Lease, error) {
	return settleLease(ctx, b, s, nil, through, reason, by, now)
}

// SettleLeaseYears settles the lease of s ended by force whose device
// never uploaded the rest: the accountant declares, with a reason, the
// last serial the device may have issued in each financial year from the
// lease's start to the year of the server's tomorrow, or to a later year
// it names (a till whose clock ran ahead printed in it): declared, every
// one of those years, none before the lease's start. In each year, serials after the last stored one up to the
// declared one are spent (the counter moves past them, so no number the
// device may have printed is issued again; the audit shows them as a
// gap), and the series is free again. A declared serial may not be below
// the year's last stored one. It returns ErrLeaseNotFound when no lease
// ended by force holds the series, ErrLeaseYearsUndeclared when a year is
// missing, ErrInvalidLease for a bad serial, year or reason, and
// db.ErrOutcomeUnknown when the COMMIT's answer was lost.
func SettleLeaseYears(ctx context.Context, b db.Beginner, s gst.Series, declared map[gst.FY]int64, reason, by string, now time.Time) (Lease, error) {
	if len(declared) == 0 {
		return Lease{}, apperr.Errorf(ErrLeaseYearsUndeclared, "declare the last serial the device may have issued in each year of the lease")
	}
	return settleLease(ctx, b, s, declared, 0, reason, by, now)
}

// settleLease is SettleLease (declared nil: through for the lease's one
// year) and SettleLeaseYears.
func settleLease(ctx context.Context, b db.Beginner, s gst.Series, declared map[gst.FY]int64, through int64, reason, by string, now time.Time) (Lease, error) {
	reason = strings.TrimSpace(reason)
	if err := checkReason(reason); err != nil {
		return Lease{}, err
	}
	var l Lease
	err := db.InTx(ctx, b, func(tx pgx.Tx) error {
		held, err := holder(ctx, tx, s)
		if err != nil {
			return err
		}
		if held == nil || held.EndedAt == nil {
			return apperr.Errorf(ErrLeaseNotFound, "series %s has no lease ended by force to settle", s.Code)
		}
		if l, err = LockLeaseTx(ctx, tx, s, held.ID); err != nil {
			return err
		}
		// From the lease's start to the year of the server's tomorrow (see
		// ForceEndLease), or to a later year the accountant declares (a
		// till whose clock ran further ahead printed in it).
		last := max(lastYear(now), l.EndFY)
		for y := range declared {
			last = max(last, y)
		}
		years := l.YearsThrough(last)
		if declared == nil {
			if len(years) > 1 {
				return apperr.Errorf(ErrLeaseYearsUndeclared, "the lease of series %s spans %s to %s: declare the last serial device %s may have issued in each of them (declared), not declared_through alone",
					s.Code, years[0], years[len(years)-1], l.DeviceID)
			}
			declared = map[gst.FY]int64{years[0]: through}
		}
		for y := range declared {
			if y < years[0] || y > years[len(years)-1] {
				return apperr.Errorf(ErrInvalidLease, "declared names %s, outside the lease's years %s to %s", y, years[0], years[len(years)-1])
			}
		}
		at := now.UTC().Truncate(time.Microsecond)
		adv := &pgx.Batch{}
		QueueLeaseName(adv, l.ID)
		for _, y := range years {
			n, ok := declared[y]
			if !ok {
				return apperr.Errorf(ErrLeaseYearsUndeclared, "declared has no serial for %s: the lease of series %s spans %s to %s, and device %s may have issued in each",
					y, s.Code, years[0], years[len(years)-1], l.DeviceID)
			}
			p, err := position(ctx, tx, s, y)
			if err != nil {
				return err
			}
			stored := p.Serial - 1
			if n < stored || n > s.Format.Capacity() {
				return apperr.Errorf(ErrInvalidLease, "declared_through %d must lie between %d, the last serial stored in %s, and %d", n, stored, y, s.Format.Capacity())
			}
			if n > stored {
				// The declared serials are spent: the series goes on after
				// them, never reusing a number the lost device may have
				// printed.
				adv.Queue(`INSERT INTO series_counters AS c (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at)
					VALUES ($1, $2, $3, $4, $5, $6, $7)
					ON CONFLICT (series_id, fy, seller_id) DO UPDATE SET last_serial = EXCLUDED.last_serial`,
					s.ID, int(y), s.SellerID, n, s.Format.Capacity(), y.Start(), at)
			}
		}
		if err := tx.SendBatch(ctx, adv).Close(); err != nil {
			return translate(err, "advance counter")
		}
		l.SettledAt, l.SettledBy, l.SettleReason, l.DeclaredThrough, l.DeclaredYears = &at, by, reason, declared[l.EndFY], declared
		_, err = tx.Exec(ctx, `UPDATE series_leases SET settled_at = $2, settled_by = $3, settle_reason = $4, declared_through = $5, declared_years = $7 WHERE lease_id = $1 AND seller_id = $6`,
			l.ID, at, by, reason, l.DeclaredThrough, s.SellerID, yearsJSON(declared))
		return translate(err, "settle lease")
	})
	if err != nil {
		return Lease{}, leaseTxFailed(err)
	}
	return l, nil
}

// lastYear returns the latest financial year a device may have numbered
// in by now: the year of the server's tomorrow (IST), the latest invoice
// date an upload is accepted with.
func lastYear(now time.Time) gst.FY { return gst.FYOf(gst.DateIST(now).AddDate(0, 0, 1)) }

func checkReason(reason string) error {
	if reason == "" || len(reason) > 300 {
		return apperr.Errorf(ErrInvalidLease, "reason must be 1 to 300 bytes")
	}
	return nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
