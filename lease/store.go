package lease

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/textcut"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"strconv"
	"strings"
	"time"
)

// This file holds the SQL of leases (migration 00015). The trigger
// series_counters_lease_guard refuses, with db.CodeLeased, every write of a
// leased series' counter rows by a transaction that does not name the
// lease (QueueLeaseName); translate maps it to series.ErrLeased.

// translate returns err as db.Translate does (series.ErrLockTimeout,
// series.ErrMoved), the lease guard's refusal as series.ErrLeased,
// otherwise wrapped as "lease: what: err"; nil stays nil.
func translate(err error, what string) error {
	if series.IsLeased(err) {
		return apperr.WithCause(series.ErrLeased, err)
	}
	return db.Translate(err, "lease: "+what)
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

// TakeLease is TakeLeaseKeyed without a key: a request that is never
// answered again.
func TakeLease(ctx context.Context, b db.Beginner, s gst.Series, deviceID, by string, now time.Time) (Lease, error) {
	l, _, err := TakeLeaseKeyed(ctx, b, s, deviceID, "", by, now)
	return l, err
}

// TakeLeaseKeyed leases s to deviceID at now (by names who asked, for the
// record) and returns the lease with where the device starts: NotBefore,
// the later of now and the series' last issue time in any year; the
// financial years it reserves, from NotBefore's (Years); and the
// position of each (Start, Next the first). A request with key (its
// Idempotency-Key, "" for none) made again, while the lease it took is in
// force and its device has not been in touch, answers that lease again,
// with replayed true: nothing but the device writes the series while the
// lease holds, so every position is as it was. It returns ErrInvalidLease
// for a bad device id and ErrLeaseHeld when the series is held by another
// lease, or by this one when the device has been in touch or it ended.
func TakeLeaseKeyed(ctx context.Context, b db.Beginner, s gst.Series, deviceID, key, by string, now time.Time) (Lease, bool, error) {
	if err := CheckDeviceID(deviceID); err != nil {
		return Lease{}, false, err
	}
	var l Lease
	replayed := false
	err := db.InTx(ctx, b, func(tx pgx.Tx) error {
		if err := lockLeases(ctx, tx, s); err != nil {
			return err
		}
		held, err := holder(ctx, tx, s)
		if err != nil {
			return err
		}
		switch {
		case held != nil && key != "" && held.TakeKey == key && held.DeviceID == deviceID && held.EndedAt == nil && held.LastContactAt == nil:
			l, replayed = *held, true
		case held != nil && held.EndedAt == nil:
			return apperr.Errorf(ErrLeaseHeld, "series %s is leased to device %s since %s", s.Code, held.DeviceID, held.LeasedAt.UTC().Format(time.RFC3339))
		case held != nil:
			return apperr.Errorf(ErrLeaseHeld, "series %s is held by device %s's lease, ended by force and not settled: device %s may have issued serials after %d of %s that were never uploaded; settle it first",
				s.Code, held.DeviceID, held.DeviceID, held.EndSerial, held.EndFY)
		default:
			l = Lease{ID: newLeaseID(), SeriesID: s.ID, DeviceID: deviceID, LeasedAt: now.UTC().Truncate(time.Microsecond), LeasedBy: by, TakeKey: key}
		}
		if l.NotBefore, err = notBefore(ctx, tx, s, l.LeasedAt); err != nil {
			return err
		}
		if !replayed {
			// The years from the device's floor's, not now's: an invoice
			// of a later year committed by a process whose clock runs
			// ahead puts the floor (and the device's first invoice) in
			// that year.
			l.Next.FY = gst.FYAt(l.NotBefore)
		}
		for _, y := range l.Years() {
			p, err := position(ctx, tx, s, y)
			if err != nil {
				return err
			}
			l.Start = append(l.Start, p)
		}
		l.Next = l.Start[0]
		if replayed {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO series_leases (lease_id, series_id, device_id, leased_at, leased_by, start_fy, start_serial, seller_id, take_key)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, l.ID, s.ID, deviceID, l.LeasedAt, by, int(l.Next.FY), l.Next.Serial, s.SellerID, nullable(key))
		if db.IsUnique(err) {
			return apperr.Errorf(ErrLeaseHeld, "series %s is already leased", s.Code)
		}
		return translate(err, "insert lease")
	})
	if err != nil {
		return Lease{}, false, leaseTxFailed(err)
	}
	return l, replayed, nil
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
	return db.TranslateTx(err, "lease")
}

// position returns where series-year (s, fy) stands, read without a row
// lock (the caller holds the series' lease lock or the counter row's lock).
func position(ctx context.Context, q db.Querier, s gst.Series, fy gst.FY) (Position, error) {
	return readPosition(ctx, q, s, fy, "")
}

// lockedPosition is position with the series-year's counter row locked
// (when it has one) until the transaction ends.
func lockedPosition(ctx context.Context, tx pgx.Tx, s gst.Series, fy gst.FY) (Position, error) {
	return readPosition(ctx, tx, s, fy, " FOR UPDATE")
}

// readPosition reads the counter row of (s, fy), with lock (a locking
// clause, or "") appended to its query.
func readPosition(ctx context.Context, q db.Querier, s gst.Series, fy gst.FY, lock string) (Position, error) {
	p := Position{FY: fy, Serial: 1}
	var last int64
	err := q.QueryRow(ctx, `SELECT last_serial, chain_length, chain_head, last_issued_at FROM series_counters WHERE series_id = $1 AND fy = $2 AND seller_id = $3`+lock,
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
	settled_at, coalesce(settled_by, ''), coalesce(settle_reason, ''), coalesce(declared_through, 0), end_years, declared_years, end_epoch,
	coalesce(take_key, ''), last_contact_at, coalesce(reported_fy, 0), coalesce(reported_serial, 0)`

func scanLease(row pgx.Row) (Lease, error) {
	var l Lease
	var startFY, endFY, reportedFY int
	var endYears, declaredYears []byte
	err := row.Scan(&l.ID, &l.SeriesID, &l.DeviceID, &l.LeasedAt, &l.LeasedBy, &startFY, &l.Next.Serial,
		&l.EndedAt, &l.EndKind, &l.EndedBy, &l.EndReason, &endFY, &l.EndSerial,
		&l.SettledAt, &l.SettledBy, &l.SettleReason, &l.DeclaredThrough, &endYears, &declaredYears, &l.EndEpoch,
		&l.TakeKey, &l.LastContactAt, &reportedFY, &l.ReportedSerial)
	l.Next.FY, l.EndFY, l.ReportedFY = gst.FY(startFY), gst.FY(endFY), gst.FY(reportedFY)
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
		return nil, fmt.Errorf("lease: years: %w", err)
	}
	out := make(map[gst.FY]int64, len(in))
	for k, n := range in {
		y, err := strconv.Atoi(k)
		if err != nil {
			return nil, fmt.Errorf("lease: years: %w", err)
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
// (an upload by the lease holder), records now as the device's last
// contact (kept only if tx commits), and returns the lease. It returns
// LockLeaseTx's errors, or the translated failure of naming the lease.
func WriteAsLeaseTx(ctx context.Context, tx pgx.Tx, s gst.Series, leaseID string, now time.Time) (Lease, error) {
	l, err := LockLeaseTx(ctx, tx, s, leaseID)
	if err != nil {
		return Lease{}, err
	}
	b := &pgx.Batch{}
	QueueLeaseName(b, leaseID)
	queueContact(b, s, &l, now)
	return l, translate(tx.SendBatch(ctx, b).Close(), "name lease")
}

// queueContact queues on b the record of the device's contact at now with
// l (whose row the transaction has locked), and sets it on l.
func queueContact(b *pgx.Batch, s gst.Series, l *Lease, now time.Time) {
	at := now.UTC().Truncate(time.Microsecond)
	l.LastContactAt = &at
	b.Queue(`UPDATE series_leases SET last_contact_at = $2 WHERE lease_id = $1 AND seller_id = $3`, l.ID, at, s.SellerID)
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
