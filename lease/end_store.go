package lease

import (
	"context"
	"fmt"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"strings"
	"time"
)

// This file holds the SQL of a lease's end: the device's end and its
// resumption (ResumeLease), the end by force of a lost device's lease, and
// its settlement.

// EndLeaseByDevice ends lease leaseID of s as its device asks: the
// device's last serial in fy (a year the lease reserves) is last, and
// every serial up to it must be stored. A lease ended by force is settled
// the same way once its device has uploaded late. The lease's other
// reserved years are declared at their last stored serial (the device
// uploads everything before it ends, and numbers no year after its
// last). The end is idempotent: the same fy and last on a lease this
// device already ended answer the lease as that end left it, so a device
// whose answer was lost learns the outcome by asking again. Every end
// request of a lease that still holds records the device's contact and
// its report (fy, last) when it is later than the one recorded, even when
// the end is refused: a settlement may not declare less. It returns the
// ended lease; ErrLeaseNotFound, ErrLeaseNotHeld (the lease ended
// otherwise), ErrNotUploaded (with the serial stored last) when the
// series-year's counter is behind last, ErrInvalidLease when it is ahead
// (the device claims fewer invoices than were stored) or fy is not a year
// of the lease, and db.ErrOutcomeUnknown when the COMMIT's answer was
// lost. With epoch (not nil) the end is the one the device asked for at
// that end epoch: it returns ErrEndSuperseded, and ends nothing, when the
// lease still holds and its epoch has moved on (the device resumed after
// asking, see ResumeLease).
func EndLeaseByDevice(ctx context.Context, b db.Beginner, s gst.Series, leaseID string, fy gst.FY, last int64, epoch *int64, now time.Time) (Lease, error) {
	if !fy.Valid() || last < 0 {
		return Lease{}, apperr.Errorf(ErrInvalidLease, "fy and last_serial must name a series-year and a serial")
	}
	var l Lease
	var refusal error // refused, with the contact and report recorded
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
		if !l.Reserves(fy) {
			return apperr.Errorf(ErrInvalidLease, "fy %s is not a year of lease %s, which reserves %s and %s", fy, l.ID, l.Years()[0], l.Years()[LeaseYears-1])
		}
		p, err := position(ctx, tx, s, fy)
		if err != nil {
			return err
		}
		switch stored := p.Serial - 1; {
		case epoch != nil && *epoch != l.EndEpoch:
			// Sent before the device resumed (and sold on): ending the
			// lease now would free serials the device has printed since.
			refusal = apperr.Errorf(ErrEndSuperseded, "this end was asked at end_epoch %d; device %s resumed the lease since (end_epoch %d)", *epoch, l.DeviceID, l.EndEpoch)
		case stored < last:
			refusal = apperr.Errorf(ErrNotUploaded, "series %s %s holds serials up to %d; upload %d to %d before ending the lease", s.Code, fy, stored, stored+1, last)
		case stored > last:
			refusal = apperr.Errorf(ErrInvalidLease, "series %s %s holds serials up to %d, beyond last_serial %d", s.Code, fy, stored, last)
		}
		report := &pgx.Batch{}
		queueContact(report, s, &l, now)
		if later := fy > l.ReportedFY || (fy == l.ReportedFY && last > l.ReportedSerial); later && last <= s.Format.Capacity() {
			l.ReportedFY, l.ReportedSerial = fy, last
			report.Queue(`UPDATE series_leases SET reported_fy = $2, reported_serial = $3 WHERE lease_id = $1 AND seller_id = $4`, l.ID, int(fy), last, s.SellerID)
		}
		if err := tx.SendBatch(ctx, report).Close(); err != nil {
			return translate(err, "record the device's report")
		}
		if refusal != nil {
			return nil
		}
		declared := map[gst.FY]int64{fy: last}
		for _, y := range l.Years() {
			if y == fy {
				continue
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
	if refusal != nil {
		return Lease{}, refusal
	}
	return l, nil
}

// ResumeLease is the device's resume after an end whose outcome it could
// not learn, or an upload refused as not under the lease: under lease
// leaseID's row lock it returns the lease as it stands, and when it is in
// force (not ended) first moves its end epoch on, so that every end the
// device asked for before (and that may still be in flight) is refused
// (ErrEndSuperseded) and the device may sell on. An ended lease is
// returned with its epoch unchanged: the device learns the end. Either way
// the device's contact at now is recorded while the lease holds. It
// returns ErrLeaseNotFound for a lease of another series or none, and
// db.ErrOutcomeUnknown when the COMMIT's answer was lost (a resume again
// is harmless: it only moves the epoch on once more).
func ResumeLease(ctx context.Context, b db.Beginner, s gst.Series, leaseID string, now time.Time) (Lease, error) {
	var l Lease
	err := db.InTx(ctx, b, func(tx pgx.Tx) error {
		var err error
		if l, err = lockLease(ctx, tx, s, leaseID); err != nil || !l.Holds() {
			return err
		}
		w := &pgx.Batch{}
		queueContact(w, s, &l, now)
		if l.EndedAt == nil {
			w.Queue(`UPDATE series_leases SET end_epoch = end_epoch + 1 WHERE lease_id = $1 AND seller_id = $2 RETURNING end_epoch`,
				l.ID, s.SellerID).QueryRow(func(r pgx.Row) error { return r.Scan(&l.EndEpoch) })
		}
		return translate(tx.SendBatch(ctx, w).Close(), "resume lease")
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

// ForceEndLease ends the lease held on s, for a lost device, recording
// the last serial uploaded (of the latest year the lease reserves that
// holds any), and in EndYears the last one of each year the lease
// reserves: the device may have numbered in each.
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
		years := map[gst.FY]int64{}
		fy, last := l.StartFY(), l.Next.Serial-1
		for _, y := range l.Years() {
			p, err := position(ctx, tx, s, y)
			if err != nil {
				return err
			}
			years[y] = p.Serial - 1
			if p.Serial > 1 {
				fy, last = y, p.Serial-1
			}
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
// through one serial. A lease reserves LeaseYears years, each of which
// must be declared: it is refused with ErrLeaseYearsUndeclared, naming
// them (settle with SettleLeaseYears); kept for the API's
// declared_through, which older clients send.
func SettleLease(ctx context.Context, b db.Beginner, s gst.Series, through int64, reason, by string, now time.Time) (Lease, error) {
	return settleLease(ctx, b, s, nil, through, reason, by, now, nil)
}

// SettleLeaseYears settles the lease of s ended by force whose device
// never uploaded the rest: the accountant declares, with a reason, the
// last serial the device may have issued in each year the lease reserves
// (declared: every one of them, no other). In each year, serials after
// the last stored one up to the declared one are spent (the counter moves
// past them, so no number the device may have printed is issued again;
// the audit shows them as a gap), and the series is free again. A
// declared serial may not be below what the server knows the device
// numbered in its year (Known: the last stored serial, or the one the
// device reported in an end request). It returns ErrLeaseNotFound when no
// lease ended by force holds the series, ErrLeaseYearsUndeclared when a
// year is missing, ErrDeclaredTooLow for a serial below what is known,
// ErrInvalidLease for a year the lease does not reserve, a serial past
// the format's capacity or a bad reason, and db.ErrOutcomeUnknown when
// the COMMIT's answer was lost.
func SettleLeaseYears(ctx context.Context, b db.Beginner, s gst.Series, declared map[gst.FY]int64, reason, by string, now time.Time, seal series.Seal) (Lease, error) {
	if len(declared) == 0 {
		return Lease{}, apperr.Errorf(ErrLeaseYearsUndeclared, "declare the last serial the device may have issued in each year of the lease")
	}
	return settleLease(ctx, b, s, declared, 0, reason, by, now, seal)
}

// settleLease is SettleLease (declared nil: through alone) and
// SettleLeaseYears.
func settleLease(ctx context.Context, b db.Beginner, s gst.Series, declared map[gst.FY]int64, through int64, reason, by string, now time.Time, seal series.Seal) (Lease, error) {
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
		years := l.Years()
		span := func() string { return fmt.Sprintf("%s and %s", years[0], years[len(years)-1]) }
		if declared == nil {
			return apperr.Errorf(ErrLeaseYearsUndeclared, "the lease of series %s reserves %s: declare the last serial device %s may have issued in each of them (declared), not declared_through %d alone",
				s.Code, span(), l.DeviceID, through)
		}
		for y := range declared {
			if !l.Reserves(y) {
				return apperr.Errorf(ErrInvalidLease, "declared names %s; the lease reserves %s only", y, span())
			}
		}
		at := now.UTC().Truncate(time.Microsecond)
		spend := &pgx.Batch{}
		QueueLeaseName(spend, l.ID)
		for _, y := range years {
			n, ok := declared[y]
			if !ok {
				return apperr.Errorf(ErrLeaseYearsUndeclared, "declared has no serial for %s: the lease of series %s reserves %s, and device %s may have issued in each",
					y, s.Code, span(), l.DeviceID)
			}
			if err := declareYear(ctx, tx, spend, s, l, y, n, declaration{at: at, by: by, reason: reason, seal: seal}); err != nil {
				return err
			}
		}
		if err := tx.SendBatch(ctx, spend).Close(); err != nil {
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

// declaration is who declares a settlement's serials, when, why, and
// how its chain records are sealed.
type declaration struct {
	at         time.Time
	by, reason string
	seal       series.Seal
}

// declareYear checks that n, the last serial the accountant declares
// lease l's device may have issued in year fy, is not below what the
// server knows it numbered there (l.Known) nor past the format's
// capacity, and queues on spend the declaration of the serials after the
// last stored one through n: the year's counter moves past them (its row
// made when the year had none), so online issuance never hands out a
// number the device may have printed; the year's chain gains a record of
// kind declared sealing them (d.seal), and serial_declarations a row
// saying which serials, which lease, who, when and why, so that verify
// and the audit read the year as intact with declared serials. It reads
// the year's counter row under its lock. It returns ErrDeclaredTooLow
// (also for a declaration that would leave stored serials after it),
// ErrInvalidLease, or the failure of reading the year.
func declareYear(ctx context.Context, tx pgx.Tx, spend *pgx.Batch, s gst.Series, l Lease, fy gst.FY, n int64, d declaration) error {
	p, err := lockedPosition(ctx, tx, s, fy)
	if err != nil {
		return err
	}
	stored := p.Serial - 1
	if known := l.Known(fy, stored); n < known {
		what := fmt.Sprintf("serials up to %d are stored (uploaded) there: a declaration names serials after them", stored)
		if known > stored {
			what = fmt.Sprintf("device %s reported having numbered through %d there", l.DeviceID, known)
		}
		return apperr.Errorf(ErrDeclaredTooLow, "declared %d for %s, but %s: declare %d or more", n, fy, what, known)
	}
	if n > s.Format.Capacity() {
		return apperr.Errorf(ErrInvalidLease, "declared %d for %s is past the format's capacity, %d", n, fy, s.Format.Capacity())
	}
	if n == stored {
		return nil
	}
	if d.seal == nil {
		return fmt.Errorf("lease: declaring serials of %s %s without a seal for their chain record", s.Code, fy)
	}
	dec := series.Declaration{FY: fy, Position: p.ChainLength + 1, First: stored + 1, Last: n, LeaseID: l.ID, DeviceID: l.DeviceID,
		DeclaredAt: d.at, DeclaredOn: declaredOn(fy, d.at), DeclaredBy: d.by, Reason: d.reason}
	if dec.FirstNumber, err = s.Format.Render(fy, dec.First); err != nil {
		return apperr.Errorf(ErrInvalidLease, "declared serials of %s: %v", fy, err)
	}
	if dec.LastNumber, err = s.Format.Render(fy, dec.Last); err != nil {
		return apperr.Errorf(ErrInvalidLease, "declared serials of %s: %v", fy, err)
	}
	hash := d.seal(s, dec, p.ChainHead)
	args := pgx.NamedArgs{"series_id": s.ID, "fy": int(fy), "seller_id": s.SellerID, "last": n, "capacity": s.Format.Capacity(),
		"fy_start": fy.Start(), "at": d.at, "position": dec.Position, "hash": hash, "first": dec.First,
		"lease_id": l.ID, "device_id": l.DeviceID, "on": dec.DeclaredOn, "by": d.by, "reason": d.reason}
	spend.Queue(`INSERT INTO series_counters AS c (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at, chain_length, chain_head)
		VALUES (@series_id, @fy, @seller_id, @last, @capacity, @fy_start, @at, @position, @hash)
		ON CONFLICT (series_id, fy, seller_id) DO UPDATE SET last_serial = EXCLUDED.last_serial, chain_length = EXCLUDED.chain_length, chain_head = EXCLUDED.chain_head`, args)
	spend.Queue(`INSERT INTO chain_records (series_id, fy, position, kind, serial, recorded_at, hash, seller_id)
		VALUES (@series_id, @fy, @position, 'declared', @last, @at, @hash, @seller_id)`, args)
	spend.Queue(`INSERT INTO serial_declarations (seller_id, series_id, fy, position, first_serial, last_serial, lease_id, device_id, declared_at, declared_on, declared_by, reason)
		VALUES (@seller_id, @series_id, @fy, @position, @first, @last, @lease_id, @device_id, @at, @on, @by, @reason)`, args)
	return nil
}

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

// declaredOn returns the date Table 13 reports a declaration of fy made at
// at on: at's IST date, or fy's first day when at is before it.
func declaredOn(fy gst.FY, at time.Time) time.Time {
	d := gst.DateIST(at)
	if d.Before(fy.Start()) {
		return fy.Start()
	}
	return d
}
