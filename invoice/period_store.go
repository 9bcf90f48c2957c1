package invoice

import (
	"context"
	"strings"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL of period locks (docs/periods.md).

// LockPeriod locks month m of seller, recorded as done by by at now, and
// returns the lock; created is false when m was locked already (the lock
// is returned as it was). It returns ErrPeriodNotEnded unless m ended
// before now's month (IST) and, read under the lock, before the database's
// clock's month, and database errors. The seller's period lock
// (lockPeriods) is held while the lock is written, so an issuing
// transaction holding it shared (a backdated invoice being issued)
// finishes first, and one that comes after sees the lock.
func LockPeriod(ctx context.Context, b db.Beginner, seller gst.Seller, m document.Month, by string, now time.Time) (lock document.PeriodLock, created bool, err error) {
	if !backdated(m.Start(), now) {
		return document.PeriodLock{}, false, apperr.Errorf(ErrPeriodNotEnded, "%s has not ended yet (today is %s in IST); lock a month after filing its GSTR-1", m, gst.DateIST(now).Format("2 Jan 2006"))
	}
	err = db.InTx(ctx, b, func(tx pgx.Tx) error {
		if err := lockPeriods(ctx, tx, seller.ID); err != nil {
			return err
		}
		// By the database's clock too, under the lock: the guards of
		// invoices dated in m judge by that clock (queuePeriodGuard).
		var ended bool
		if err := tx.QueryRow(ctx, `SELECT $1::date < date_trunc('month', clock_timestamp() AT TIME ZONE 'Asia/Kolkata')::date`, m.Start()).Scan(&ended); err != nil {
			return err
		}
		if !ended {
			return apperr.Errorf(ErrPeriodNotEnded, "%s has not ended yet by the database's clock; lock a month after filing its GSTR-1", m)
		}
		at := now.UTC().Truncate(time.Microsecond)
		tag, err := tx.Exec(ctx, `INSERT INTO period_locks (seller_id, period, locked_at, locked_by) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
			seller.ID, m.Start(), at, by)
		if err != nil {
			return err
		}
		if created = tag.RowsAffected() == 1; created {
			if _, err := tx.Exec(ctx, `INSERT INTO period_lock_events (seller_id, period, action, at, by) VALUES ($1, $2, 'lock', $3, $4)`,
				seller.ID, m.Start(), at, by); err != nil {
				return err
			}
		}
		return tx.QueryRow(ctx, `SELECT locked_at, locked_by FROM period_locks WHERE seller_id = $1 AND period = $2`, seller.ID, m.Start()).
			Scan(&lock.LockedAt, &lock.LockedBy)
	})
	if err != nil {
		if apperr.KindOf(err) != apperr.Internal {
			return document.PeriodLock{}, false, err
		}
		return document.PeriodLock{}, false, translate(err, "lock period")
	}
	lock.Month = m
	return lock, created, nil
}

// UnlockPeriod unlocks month m of seller and records who (by), when (now)
// and why (reason, required). It returns document.ErrInvalid for an empty or
// overlong reason, ErrPeriodNotLocked, and database errors.
func UnlockPeriod(ctx context.Context, b db.Beginner, seller gst.Seller, m document.Month, by, reason string, now time.Time) error {
	reason = strings.TrimSpace(reason)
	if err := document.CheckText("reason", reason, false); err != nil {
		return err
	}
	err := db.InTx(ctx, b, func(tx pgx.Tx) error {
		if err := lockPeriods(ctx, tx, seller.ID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM period_locks WHERE seller_id = $1 AND period = $2`, seller.ID, m.Start())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return apperr.Errorf(ErrPeriodNotLocked, "%s is not locked", m)
		}
		_, err = tx.Exec(ctx, `INSERT INTO period_lock_events (seller_id, period, action, at, by, reason) VALUES ($1, $2, 'unlock', $3, $4, $5)`,
			seller.ID, m.Start(), now.UTC().Truncate(time.Microsecond), by, reason)
		return err
	})
	if apperr.KindOf(err) != apperr.Internal {
		return err
	}
	return translate(err, "unlock period")
}

// PeriodLocks returns the seller's locked months, newest first.
func PeriodLocks(ctx context.Context, q db.Querier, sellerID int64) ([]document.PeriodLock, error) {
	rows, err := q.Query(ctx, `SELECT period, locked_at, locked_by FROM period_locks WHERE seller_id = $1 ORDER BY period DESC`, sellerID)
	if err != nil {
		return nil, translate(err, "list period locks")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (document.PeriodLock, error) {
		var l document.PeriodLock
		var p time.Time
		err := r.Scan(&p, &l.LockedAt, &l.LockedBy)
		l.Month = document.Month(p)
		return l, err
	})
	return out, translate(err, "list period locks")
}

// PeriodEvents returns every lock and unlock of the seller's months, oldest
// first.
func PeriodEvents(ctx context.Context, q db.Querier, sellerID int64) ([]document.PeriodEvent, error) {
	rows, err := q.Query(ctx, `SELECT period, action, at, by, reason FROM period_lock_events WHERE seller_id = $1 ORDER BY id`, sellerID)
	if err != nil {
		return nil, translate(err, "list period events")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (document.PeriodEvent, error) {
		var e document.PeriodEvent
		var p time.Time
		err := r.Scan(&p, &e.Action, &e.At, &e.By, &e.Reason)
		e.Month = document.Month(p)
		return e, err
	})
	return out, translate(err, "list period events")
}

// CheckPeriod returns ErrPeriodLocked when date (an invoice's date) lies in
// a locked month of seller, nil otherwise. An invoice dated in now's month
// (IST) or later is never in a locked month and costs no query. This is the
// early, exact answer; the issuing transaction checks again under the
// seller's row lock (queuePeriodGuard), which is what makes it race-free.
func CheckPeriod(ctx context.Context, q db.Querier, seller gst.Seller, date, now time.Time) error {
	if !backdated(date, now) {
		return nil
	}
	var locked bool
	m := document.MonthOf(date)
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM period_locks WHERE seller_id = $1 AND period = $2)`, seller.ID, m.Start()).Scan(&locked); err != nil {
		return translate(err, "check period lock")
	}
	if locked {
		return lockedError(m)
	}
	return nil
}

// The seller's period lock serialises locking a month against issuing
// into it: LockPeriod and UnlockPeriod take it exclusively, a transaction
// that writes a backdated invoice or cancellation shared, before it reads
// period_locks. It is a transaction-scoped advisory lock, taken by a
// statement that reads one of the seller's tables filtered by the seller:
// on Citus (docs/scale-out.md) that statement runs whole on the worker
// holding the seller's shard group, so every taker meets there, inside the
// transaction's single-shard work, where a row lock on the reference
// table sellers (the former guard) would be a write on every node,
// committed in two phases. On plain PostgreSQL it costs no tuple lock.

// lockPeriods takes seller's period lock exclusively, in tx. The aggregate
// makes the statement return its row (and take the lock) whether or not
// the seller has series.
func lockPeriods(ctx context.Context, tx pgx.Tx, sellerID int64) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('period:' || $1::bigint, 0)), count(*)
		FROM series WHERE seller_id = $1`, sellerID)
	return err
}

// periodGuard is what queuePeriodGuard queued: the months it checks.
type periodGuard struct{ months []document.Month }

// mayBeBackdated is the SQL condition, over u.m (a month's first day) and
// u.late (backdated by the process's clock), under which a guard takes its
// seller's period lock: the month has ended by the database's clock at the
// statement, or ends within periodMargin.
const mayBeBackdated = `(u.late OR u.m < date_trunc('month', (clock_timestamp() + interval '` + periodMargin + `') AT TIME ZONE 'Asia/Kolkata')::date)`

// queuePeriodGuard queues on b, for the groups with invoices written
// (written[g], all of a group or, for a group issued in part before its
// series ran out, its first ones) dated before the month of now plus
// guardHorizon, their sellers' period locks shared (one per series row:
// re-entrant) and then a requirement that none of their months is locked.
// Whether a group's date is backdated is decided by the database's clock
// when the first statement runs, after the counter rows' locks were
// waited for (mayBeBackdated), not by now, the batch's start: a month
// that ends while the batch waits is guarded. The period lock waits for a
// LockPeriod in progress, and the requirement, a statement of its own,
// then sees its lock; a LockPeriod that comes later waits for this
// transaction. Nothing is queued when every date is in now's month and
// the month ends more than guardHorizon after now, the common case. It
// must be queued after the counter rows are locked.
func queuePeriodGuard(b *pgx.Batch, groups []Group, written [][]document.Invoice, now time.Time) periodGuard {
	var sellers, seriesIDs []int64
	var months []time.Time
	var late []bool
	var g periodGuard
	for i, gr := range groups {
		if len(written[i]) == 0 || !nearMonthEnd(gr.Drafts[0].InvoiceDate, now) {
			continue
		}
		m := document.MonthOf(gr.Drafts[0].InvoiceDate)
		sellers, seriesIDs, months = append(sellers, gr.Seller.ID), append(seriesIDs, gr.Series.ID), append(months, m.Start())
		late = append(late, backdated(gr.Drafts[0].InvoiceDate, now))
		g.months = append(g.months, m)
	}
	if len(sellers) == 0 {
		return g
	}
	b.Queue(`SELECT pg_advisory_xact_lock_shared(hashtextextended('period:' || s.seller_id, 0))
		FROM series s JOIN unnest($1::bigint[], $2::bigint[], $3::date[], $4::bool[]) AS u(seller_id, id, m, late) ON s.seller_id = u.seller_id AND s.id = u.id
		WHERE s.seller_id = ANY ($1::bigint[]) AND s.id = ANY ($2::bigint[]) AND `+mayBeBackdated, sellers, seriesIDs, months, late)
	// Every pair is checked: a month that has not ended has no lock.
	b.Queue(`SELECT invoiced_require(NOT EXISTS (
			SELECT 1 FROM period_locks p JOIN unnest($1::bigint[], $2::date[]) AS u(s, m) ON p.seller_id = u.s AND p.period = u.m
			WHERE p.seller_id = ANY ($1::bigint[])),
			$3, 'an invoice is dated in a locked month')`, sellers, months, db.CodePeriodLocked)
	return g
}

// translate returns err as ErrPeriodLocked when the guard's requirement
// failed, and err otherwise.
func (g periodGuard) translate(err error) error {
	if db.SQLState(err) != db.CodePeriodLocked {
		return err
	}
	if len(g.months) == 1 {
		return apperr.WithCause(lockedError(g.months[0]), err)
	}
	names := make([]string, len(g.months))
	for i, m := range g.months {
		names[i] = m.String()
	}
	return apperr.WithCause(apperr.Errorf(ErrPeriodLocked, "one of %s was locked (its GSTR-1 filed) while the invoices waited; issue a credit or debit note dated today instead", strings.Join(names, ", ")), err)
}

// CheckPeriodTx returns ErrPeriodLocked when inv's month is locked, read
// under its seller's period lock (shared) so that a LockPeriod in progress
// is waited for. As in queuePeriodGuard, whether the invoice's date is
// backdated is decided by the database's clock when the lock is taken
// (after the invoice and counter rows were waited for), not by now; a date
// in now's month that ends more than guardHorizon after now costs nothing.
func CheckPeriodTx(ctx context.Context, tx pgx.Tx, inv document.Invoice, now time.Time) error {
	if !nearMonthEnd(inv.InvoiceDate, now) {
		return nil
	}
	m := document.MonthOf(inv.InvoiceDate)
	var locked bool
	if err := tx.QueryRow(ctx, `SELECT count(pg_advisory_xact_lock_shared(hashtextextended('period:' || s.seller_id, 0)))
		FROM series s, (SELECT $3::date AS m, $4::bool AS late) u
		WHERE s.seller_id = $1 AND s.id = $2 AND `+mayBeBackdated, inv.SellerID, inv.SeriesID, m.Start(), backdated(inv.InvoiceDate, now)).Scan(new(int64)); err != nil {
		return translate(err, "lock periods")
	}
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM period_locks WHERE seller_id = $1 AND period = $2)`, inv.SellerID, m.Start()).Scan(&locked); err != nil {
		return translate(err, "check period lock")
	}
	if locked {
		return lockedError(m)
	}
	return nil
}
