package series

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL of leases (migration 00015). The trigger
// series_counters_lease_guard refuses, with codeLeased, every write of a
// leased series' counter rows by a transaction that does not name the
// lease (QueueLeaseName); translate maps it to ErrLeased.

// codeLeased is the SQLSTATE of the lease guard.
const codeLeased = "IV017"

// IsLeased reports whether err is the lease guard's refusal.
func IsLeased(err error) bool {
	return errors.Is(err, ErrLeased) || db.SQLState(err) == codeLeased
}

var leaseEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newLeaseID returns "ls_" and 128 random bits (26 characters).
func newLeaseID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand documents it)
	return "ls_" + leaseEncoding.EncodeToString(b[:])
}

// lockLeases takes the series' lease lock exclusively: it waits for every
// transaction that passed the lease guard of the series and is still open
// (they hold it shared), and holds off every later one until tx ends.
//
// The guard is a trigger on series_counters, so on Citus
// (docs/scale-out.md) it runs on the worker holding the seller's shard
// group and takes the lock there. The lock is taken here by a statement
// that reads the seller's series row, filtered by the seller: Citus runs
// such a statement whole on that worker, function calls included, so both
// meet in one lock space; a bare SELECT pg_advisory_xact_lock(…) would run
// on the coordinator and meet nothing. The aggregate returns a row (and so
// takes the lock) in any case. On plain PostgreSQL it is the same lock.
func lockLeases(ctx context.Context, tx pgx.Tx, s Series) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('lease:' || $1::bigint, 0)), count(*)
		FROM series WHERE id = $1 AND seller_id = $2`, s.ID, s.SellerID)
	return translate(err, "lock leases")
}

// QueueLeaseName queues on b the statement that names lease leaseID for
// the rest of the transaction, so that the lease guard lets it write the
// leased series' counter rows. It is SET LOCAL, not set_config(): on Citus
// the guard runs on the worker, and a coordinator propagates SET LOCAL to
// the workers of its transaction (citus.propagate_set_commands = local)
// but not a function's setting. SET takes no parameters: the id is quoted
// as a literal (a lease id is letters, digits and '_', checked by the
// caller's lookup; quoting makes any text safe anyway).
func QueueLeaseName(b *pgx.Batch, leaseID string) {
	b.Queue(`SET LOCAL invoiced.lease_id = ` + quoteLiteral(leaseID))
}

// quoteLiteral returns s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// TakeLease leases s to deviceID at now (by names who asked, for the
// record) and returns the lease with the position the device continues
// from: the series-year of now (IST), its next serial and chain head. It
// returns ErrInvalidLease for a bad device id and ErrLeaseHeld when the
// series is held by a lease (of this or another device) not yet settled.
func TakeLease(ctx context.Context, b db.Beginner, s Series, deviceID, by string, now time.Time) (Lease, error) {
	if err := CheckDeviceID(deviceID); err != nil {
		return Lease{}, err
	}
	var l Lease
	err := db.InTx(ctx, b, func(tx pgx.Tx) error {
		if err := lockLeases(ctx, tx, s); err != nil {
			return err
		}
		held, err := holder(ctx, tx, s)
		if err != nil {
			return err
		}
		if held != nil {
			if held.EndedAt == nil {
				return apperr.Errorf(ErrLeaseHeld, "series %s is leased to device %s since %s", s.Code, held.DeviceID, held.LeasedAt.UTC().Format(time.RFC3339))
			}
			return apperr.Errorf(ErrLeaseHeld, "series %s is held by device %s's lease, ended by force and not settled: device %s may have issued serials after %d of %s that were never uploaded; settle it first",
				s.Code, held.DeviceID, held.DeviceID, held.EndSerial, held.EndFY)
		}
		fy := FYAt(now)
		next, err := position(ctx, tx, s, fy)
		if err != nil {
			return err
		}
		l = Lease{ID: newLeaseID(), SeriesID: s.ID, DeviceID: deviceID, LeasedAt: now.UTC().Truncate(time.Microsecond), LeasedBy: by, Next: next}
		_, err = tx.Exec(ctx, `INSERT INTO series_leases (lease_id, series_id, device_id, leased_at, leased_by, start_fy, start_serial, seller_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, l.ID, s.ID, deviceID, l.LeasedAt, by, int(fy), next.Serial, s.SellerID)
		if isUnique(err) {
			return apperr.Errorf(ErrLeaseHeld, "series %s is already leased", s.Code)
		}
		return translate(err, "insert lease")
	})
	if err != nil {
		return Lease{}, db.TranslateTx(err, "series")
	}
	return l, nil
}

// position returns where series-year (s, fy) stands, read without a row
// lock (the caller holds the series' lease lock or the counter row's lock).
func position(ctx context.Context, q db.Querier, s Series, fy FY) (Position, error) {
	p := Position{FY: fy, Serial: 1}
	var last int64
	err := q.QueryRow(ctx, `SELECT last_serial, chain_length, chain_head, last_issued_at FROM series_counters WHERE series_id = $1 AND fy = $2 AND seller_id = $3`,
		s.ID, int(fy), s.SellerID).Scan(&last, &p.ChainLength, &p.ChainHead, &p.LastIssuedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, nil
	}
	if err != nil {
		return Position{}, translate(err, "read counter")
	}
	p.Serial = last + 1
	return p, nil
}

// NextPosition returns where series-year (seriesID, fy) stands now: its
// next serial and chain head.
func NextPosition(ctx context.Context, q db.Querier, seriesID int64, fy FY) (Position, error) {
	p := Position{FY: fy, Serial: 1}
	var last int64
	err := q.QueryRow(ctx, `SELECT last_serial, chain_length, chain_head, last_issued_at FROM series_counters WHERE series_id = $1 AND fy = $2`,
		seriesID, int(fy)).Scan(&last, &p.ChainLength, &p.ChainHead, &p.LastIssuedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, nil
	}
	if err != nil {
		return Position{}, translate(err, "read counter")
	}
	p.Serial = last + 1
	return p, nil
}

const leaseCols = `lease_id, series_id, device_id, leased_at, leased_by, start_fy, start_serial,
	ended_at, coalesce(end_kind, ''), coalesce(ended_by, ''), coalesce(end_reason, ''), coalesce(end_fy, 0), coalesce(end_serial, 0),
	settled_at, coalesce(settled_by, ''), coalesce(settle_reason, ''), coalesce(declared_through, 0)`

func scanLease(row pgx.Row) (Lease, error) {
	var l Lease
	var startFY, endFY int
	err := row.Scan(&l.ID, &l.SeriesID, &l.DeviceID, &l.LeasedAt, &l.LeasedBy, &startFY, &l.Next.Serial,
		&l.EndedAt, &l.EndKind, &l.EndedBy, &l.EndReason, &endFY, &l.EndSerial,
		&l.SettledAt, &l.SettledBy, &l.SettleReason, &l.DeclaredThrough)
	l.Next.FY, l.EndFY = FY(startFY), FY(endFY)
	return l, err
}

// holder returns the lease holding series s, nil when none does.
func holder(ctx context.Context, q db.Querier, s Series) (*Lease, error) {
	l, err := scanLease(q.QueryRow(ctx, `SELECT `+leaseCols+` FROM series_leases WHERE series_id = $1 AND seller_id = $2 AND settled_at IS NULL`, s.ID, s.SellerID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, translate(err, "read lease")
	}
	return &l, nil
}

// Leases returns every lease of series seriesID, oldest first. Next holds
// the position each lease started from (its chain head is not kept).
func Leases(ctx context.Context, q db.Querier, seriesID int64) ([]Lease, error) {
	rows, err := q.Query(ctx, `SELECT `+leaseCols+` FROM series_leases WHERE series_id = $1 ORDER BY id`, seriesID)
	if err != nil {
		return nil, translate(err, "list leases")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Lease, error) { return scanLease(r) })
	return out, translate(err, "list leases")
}

// WriteAsLeaseTx locks lease leaseID of series s inside tx and names it
// for the rest of tx, so that tx may write the leased series' counter rows
// (an upload by the lease holder). It returns LockLeaseTx's errors, or the
// translated failure of naming the lease.
func WriteAsLeaseTx(ctx context.Context, tx pgx.Tx, s Series, leaseID string) error {
	if _, err := LockLeaseTx(ctx, tx, s, leaseID); err != nil {
		return err
	}
	b := &pgx.Batch{}
	QueueLeaseName(b, leaseID)
	return translate(tx.SendBatch(ctx, b).Close(), "name lease")
}

// LockLeaseTx locks lease leaseID of series s inside tx and returns it,
// for a transaction that writes as the lease (an upload) or ends it. It
// returns ErrLeaseNotFound for a lease of another series or none, and
// ErrLeaseNotHeld for one that no longer holds its series.
func LockLeaseTx(ctx context.Context, tx pgx.Tx, s Series, leaseID string) (Lease, error) {
	l, err := scanLease(tx.QueryRow(ctx, `SELECT `+leaseCols+` FROM series_leases WHERE lease_id = $1 AND series_id = $2 AND seller_id = $3 FOR UPDATE`, leaseID, s.ID, s.SellerID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, apperr.Errorf(ErrLeaseNotFound, "lease %q is not a lease of this series", clipText(leaseID))
	}
	if err != nil {
		return Lease{}, translate(err, "lock lease")
	}
	if !l.Holds() {
		return Lease{}, apperr.Errorf(ErrLeaseNotHeld, "lease %s of device %s ended at %s", l.ID, l.DeviceID, l.EndedAt.UTC().Format(time.RFC3339))
	}
	return l, nil
}

// EndLeaseByDevice ends lease leaseID of s as its device asks: the
// device's last serial in fy is last, and every serial up to it must be
// stored. A lease ended by force is settled the same way once its device
// has uploaded late. It returns the ended lease; ErrLeaseNotFound,
// ErrLeaseNotHeld, ErrNotUploaded (with the serial stored last) when the
// series-year's counter is behind last, and ErrInvalidLease when it is
// ahead (the device claims fewer invoices than were stored).
func EndLeaseByDevice(ctx context.Context, b db.Beginner, s Series, leaseID string, fy FY, last int64, now time.Time) (Lease, error) {
	if !fy.Valid() || last < 0 {
		return Lease{}, apperr.Errorf(ErrInvalidLease, "fy and last_serial must name a series-year and a serial")
	}
	var l Lease
	err := db.InTx(ctx, b, func(tx pgx.Tx) error {
		var err error
		if l, err = LockLeaseTx(ctx, tx, s, leaseID); err != nil {
			return err
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
		at := now.UTC().Truncate(time.Microsecond)
		by := "device " + l.DeviceID
		if l.EndedAt == nil {
			l.EndedAt, l.EndKind, l.EndedBy, l.EndFY, l.EndSerial = &at, EndByDevice, by, fy, last
			l.SettledAt, l.SettledBy, l.DeclaredThrough = &at, by, last
		} else {
			l.SettledAt, l.SettledBy, l.SettleReason, l.DeclaredThrough = &at, by, fmt.Sprintf("uploaded late through serial %d of %s", last, fy), last
		}
		_, err = tx.Exec(ctx, `UPDATE series_leases SET ended_at = $2, end_kind = $3, ended_by = $4, end_fy = $5, end_serial = $6,
			settled_at = $7, settled_by = $8, settle_reason = $9, declared_through = $10 WHERE lease_id = $1 AND seller_id = $11`,
			l.ID, l.EndedAt, l.EndKind, l.EndedBy, int(l.EndFY), l.EndSerial, l.SettledAt, l.SettledBy, nullable(l.SettleReason), l.DeclaredThrough, s.SellerID)
		return translate(err, "end lease")
	})
	if err != nil {
		return Lease{}, db.TranslateTx(err, "series")
	}
	return l, nil
}

// ForceEndLease ends the lease held on s, for a lost device, recording the
// last serial uploaded (of the latest series-year the series numbered).
// The series stays held until the lease is settled (SettleLease, or the
// device's late upload and EndLeaseByDevice): until then the audit lists
// the serials the device may have issued and never uploaded. It returns
// ErrInvalidLease without a reason and ErrLeaseNotFound when no lease is
// in force (one already ended by force is settled with SettleLease).
func ForceEndLease(ctx context.Context, b db.Beginner, s Series, reason, by string, now time.Time) (Lease, error) {
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
		at := now.UTC().Truncate(time.Microsecond)
		l.EndedAt, l.EndKind, l.EndedBy, l.EndReason, l.EndFY, l.EndSerial = &at, EndForced, by, reason, fy, last
		_, err = tx.Exec(ctx, `UPDATE series_leases SET ended_at = $2, end_kind = 'forced', ended_by = $3, end_reason = $4, end_fy = $5, end_serial = $6
			WHERE lease_id = $1 AND seller_id = $7`, l.ID, at, by, reason, int(fy), last, s.SellerID)
		return translate(err, "force lease end")
	})
	if err != nil {
		return Lease{}, db.TranslateTx(err, "series")
	}
	return l, nil
}

// SettleLease settles the lease of s ended by force whose device never
// uploaded the rest: the accountant declares, with a reason, that the
// device issued at most up to serial through of the lease's end year;
// serials after the last stored one up to through are spent (the counter
// moves past them, so no number the device may have printed is issued
// again; the audit shows them as a gap), and the series is free again. through may not be below
// the last stored serial. It returns ErrLeaseNotFound when no lease ended
// by force holds the series and ErrInvalidLease for a bad through or
// reason.
func SettleLease(ctx context.Context, b db.Beginner, s Series, through int64, reason, by string, now time.Time) (Lease, error) {
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
		p, err := position(ctx, tx, s, l.EndFY)
		if err != nil {
			return err
		}
		if stored := p.Serial - 1; through < stored || through > s.Format.Capacity() {
			return apperr.Errorf(ErrInvalidLease, "declared_through %d must lie between %d, the last serial stored in %s, and %d", through, stored, l.EndFY, s.Format.Capacity())
		}
		at := now.UTC().Truncate(time.Microsecond)
		if stored := p.Serial - 1; through > stored {
			// The declared serials are spent: the series goes on after them,
			// never reusing a number the lost device may have printed.
			b := &pgx.Batch{}
			QueueLeaseName(b, l.ID)
			b.Queue(`INSERT INTO series_counters AS c (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7)
				ON CONFLICT (series_id, fy, seller_id) DO UPDATE SET last_serial = EXCLUDED.last_serial`,
				s.ID, int(l.EndFY), s.SellerID, through, s.Format.Capacity(), l.EndFY.Start(), at)
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return translate(err, "advance counter")
			}
		}
		l.SettledAt, l.SettledBy, l.SettleReason, l.DeclaredThrough = &at, by, reason, through
		_, err = tx.Exec(ctx, `UPDATE series_leases SET settled_at = $2, settled_by = $3, settle_reason = $4, declared_through = $5 WHERE lease_id = $1 AND seller_id = $6`,
			l.ID, at, by, reason, through, s.SellerID)
		return translate(err, "settle lease")
	})
	if err != nil {
		return Lease{}, db.TranslateTx(err, "series")
	}
	return l, nil
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
