package series

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/textcut"
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
func lockLeases(ctx context.Context, tx pgx.Tx, s gst.Series) error {
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
// from: the series-year (IST) of the lease's NotBefore (the later of now
// and the series' last issue time), its next serial and chain head. It
// returns ErrInvalidLease for a bad device id and ErrLeaseHeld when the
// series is held by a lease (of this or another device) not yet settled.
func TakeLease(ctx context.Context, b db.Beginner, s gst.Series, deviceID, by string, now time.Time) (Lease, error) {
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
		l = Lease{ID: newLeaseID(), SeriesID: s.ID, DeviceID: deviceID, LeasedAt: now.UTC().Truncate(time.Microsecond), LeasedBy: by}
		if l.NotBefore, err = notBefore(ctx, tx, s, l.LeasedAt); err != nil {
			return err
		}
		// The year of the device's floor, not of now: an invoice of a
		// later year committed by a process whose clock runs ahead puts
		// the floor (and the device's first invoice) in that year, which
		// must continue after its stored serials (docs/offline.md).
		fy := gst.FYAt(l.NotBefore)
		if l.Next, err = position(ctx, tx, s, fy); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO series_leases (lease_id, series_id, device_id, leased_at, leased_by, start_fy, start_serial, seller_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, l.ID, s.ID, deviceID, l.LeasedAt, by, int(fy), l.Next.Serial, s.SellerID)
		if isUnique(err) {
			return apperr.Errorf(ErrLeaseHeld, "series %s is already leased", s.Code)
		}
		return translate(err, "insert lease")
	})
	if err != nil {
		return Lease{}, leaseTxFailed(err)
	}
	return l, nil
}

// notBefore returns the earliest issue time a device leasing s at
// leasedAt may use: the later of leasedAt and the series' last issue time
// in any financial year (a year turned by the server's clock has no
// invoice yet, so the year's own last_issued_at is no floor).
func notBefore(ctx context.Context, q db.Querier, s gst.Series, leasedAt time.Time) (time.Time, error) {
	var last *time.Time
	if err := q.QueryRow(ctx, `SELECT max(last_issued_at) FROM series_counters WHERE series_id = $1 AND seller_id = $2`, s.ID, s.SellerID).Scan(&last); err != nil {
		return time.Time{}, translate(err, "read last issue time")
	}
	if last != nil && last.After(leasedAt) {
		return last.UTC(), nil
	}
	return leasedAt, nil
}

// leaseTxFailed returns the error of a lease transaction: a COMMIT whose
// answer was lost is db.ErrOutcomeUnknown (503 commit_outcome_unknown: it
// may be done), as on issue and cancel; the rest as db.TranslateTx.
func leaseTxFailed(err error) error {
	var te *db.TxError
	if errors.As(err, &te) && te.Op == db.OpCommit && db.ClassifyCommit(te.Err) == db.OutcomeUnknown {
		return apperr.WithCause(db.ErrOutcomeUnknown, err)
	}
	return db.TranslateTx(err, "series")
}

// position returns where series-year (s, fy) stands, read without a row
// lock (the caller holds the series' lease lock or the counter row's lock).
func position(ctx context.Context, q db.Querier, s gst.Series, fy gst.FY) (Position, error) {
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

// NextPosition returns where series-year (s, fy) stands now: its next
// serial and chain head, read without a lock.
func NextPosition(ctx context.Context, q db.Querier, s gst.Series, fy gst.FY) (Position, error) {
	return position(ctx, q, s, fy)
}

const leaseCols = `lease_id, series_id, device_id, leased_at, leased_by, start_fy, start_serial,
	ended_at, coalesce(end_kind, ''), coalesce(ended_by, ''), coalesce(end_reason, ''), coalesce(end_fy, 0), coalesce(end_serial, 0),
	settled_at, coalesce(settled_by, ''), coalesce(settle_reason, ''), coalesce(declared_through, 0), end_years, declared_years, end_epoch`

func scanLease(row pgx.Row) (Lease, error) {
	var l Lease
	var startFY, endFY int
	var endYears, declaredYears []byte
	err := row.Scan(&l.ID, &l.SeriesID, &l.DeviceID, &l.LeasedAt, &l.LeasedBy, &startFY, &l.Next.Serial,
		&l.EndedAt, &l.EndKind, &l.EndedBy, &l.EndReason, &endFY, &l.EndSerial,
		&l.SettledAt, &l.SettledBy, &l.SettleReason, &l.DeclaredThrough, &endYears, &declaredYears, &l.EndEpoch)
	l.Next.FY, l.EndFY = gst.FY(startFY), gst.FY(endFY)
	if err != nil {
		return l, err
	}
	if l.EndYears, err = parseYears(endYears); err != nil {
		return l, err
	}
	l.DeclaredYears, err = parseYears(declaredYears)
	return l, err
}

// yearsJSON returns serials per financial year as stored: a JSON object
// keyed by the year's start ({"2026": 3}); nil for none.
func yearsJSON(m map[gst.FY]int64) []byte {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]int64, len(m))
	for y, n := range m {
		out[strconv.Itoa(int(y))] = n
	}
	b, _ := json.Marshal(out) // a map of strings to numbers always marshals
	return b
}

// parseYears reads yearsJSON's object; nil for NULL.
func parseYears(b []byte) (map[gst.FY]int64, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var in map[string]int64
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("series: lease years: %w", err)
	}
	out := make(map[gst.FY]int64, len(in))
	for k, n := range in {
		y, err := strconv.Atoi(k)
		if err != nil {
			return nil, fmt.Errorf("series: lease years: %w", err)
		}
		out[gst.FY(y)] = n
	}
	return out, nil
}

// GetLease returns lease leaseID of series s as it stands (held, ended or
// settled), read without a lock. It returns ErrLeaseNotFound for a lease
// of another series or none.
func GetLease(ctx context.Context, q db.Querier, s gst.Series, leaseID string) (Lease, error) {
	l, err := scanLease(q.QueryRow(ctx, `SELECT `+leaseCols+` FROM series_leases WHERE lease_id = $1 AND series_id = $2 AND seller_id = $3`, leaseID, s.ID, s.SellerID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, apperr.Errorf(ErrLeaseNotFound, "lease %q is not a lease of this series", textcut.To(leaseID, textcut.Echo))
	}
	if err != nil {
		return Lease{}, translate(err, "read lease")
	}
	return l, nil
}

// HolderLease returns the lease holding series s (in force, or ended by
// force and not settled); ErrLeaseNotFound when none does.
func HolderLease(ctx context.Context, q db.Querier, s gst.Series) (Lease, error) {
	l, err := holder(ctx, q, s)
	if err != nil {
		return Lease{}, err
	}
	if l == nil {
		return Lease{}, apperr.Errorf(ErrLeaseNotFound, "series %s is not leased", s.Code)
	}
	return *l, nil
}

// holder returns the lease holding series s, nil when none does.
func holder(ctx context.Context, q db.Querier, s gst.Series) (*Lease, error) {
	l, err := scanLease(q.QueryRow(ctx, `SELECT `+leaseCols+` FROM series_leases WHERE series_id = $1 AND seller_id = $2 AND settled_at IS NULL`, s.ID, s.SellerID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, translate(err, "read lease")
	}
	return &l, nil
}

// Leases returns every lease of series s, oldest first. Next holds the
// position each lease started from (its chain head is not kept).
func Leases(ctx context.Context, q db.Querier, s gst.Series) ([]Lease, error) {
	rows, err := q.Query(ctx, `SELECT `+leaseCols+` FROM series_leases WHERE series_id = $1 AND seller_id = $2 ORDER BY id`, s.ID, s.SellerID)
	if err != nil {
		return nil, translate(err, "list leases")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Lease, error) { return scanLease(r) })
	return out, translate(err, "list leases")
}

// WriteAsLeaseTx locks lease leaseID of series s inside tx and names it
// for the rest of tx, so that tx may write the leased series' counter rows
// (an upload by the lease holder), and returns the lease. It returns
// LockLeaseTx's errors, or the translated failure of naming the lease.
func WriteAsLeaseTx(ctx context.Context, tx pgx.Tx, s gst.Series, leaseID string) (Lease, error) {
	l, err := LockLeaseTx(ctx, tx, s, leaseID)
	if err != nil {
		return Lease{}, err
	}
	b := &pgx.Batch{}
	QueueLeaseName(b, leaseID)
	return l, translate(tx.SendBatch(ctx, b).Close(), "name lease")
}

// LockLeaseTx locks lease leaseID of series s inside tx and returns it,
// for a transaction that writes as the lease (an upload) or ends it. It
// returns ErrLeaseNotFound for a lease of another series or none, and
// ErrLeaseNotHeld for one that no longer holds its series.
func LockLeaseTx(ctx context.Context, tx pgx.Tx, s gst.Series, leaseID string) (Lease, error) {
	l, err := lockLease(ctx, tx, s, leaseID)
	if err != nil {
		return Lease{}, err
	}
	if !l.Holds() {
		return Lease{}, apperr.Errorf(ErrLeaseNotHeld, "lease %s of device %s ended at %s", l.ID, l.DeviceID, l.EndedAt.UTC().Format(time.RFC3339))
	}
	return l, nil
}

// lockLease locks lease leaseID of series s inside tx and returns it,
// whether or not it holds its series; ErrLeaseNotFound when there is none.
func lockLease(ctx context.Context, tx pgx.Tx, s gst.Series, leaseID string) (Lease, error) {
	l, err := scanLease(tx.QueryRow(ctx, `SELECT `+leaseCols+` FROM series_leases WHERE lease_id = $1 AND series_id = $2 AND seller_id = $3 FOR UPDATE`, leaseID, s.ID, s.SellerID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, apperr.Errorf(ErrLeaseNotFound, "lease %q is not a lease of this series", textcut.To(leaseID, textcut.Echo))
	}
	if err != nil {
		return Lease{}, translate(err, "lock lease")
	}
	return l, nil
}

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
