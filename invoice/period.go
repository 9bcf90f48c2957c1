package invoice

import (
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
)

// Errors of period locks; match them with errors.Is.
var (
	// ErrPeriodLocked: the invoice is dated in a month whose GSTR-1 is
	// filed and locked; it may not be issued (backdated) or cancelled.
	ErrPeriodLocked = apperr.New(apperr.Conflict, "period_locked", "the invoice's month is locked: its GSTR-1 is filed")
	// ErrPeriodNotEnded: only a month that has ended (in IST) can be
	// locked.
	ErrPeriodNotEnded = apperr.New(apperr.Invalid, "period_not_ended", "only a month that has ended can be locked")
	// ErrPeriodNotLocked: Unlock was asked for a month that is not locked.
	ErrPeriodNotLocked = apperr.New(apperr.NotFound, "period_not_locked", "the month is not locked")
)

// backdated reports whether date lies before the month of now (IST): only
// such dates can be in a locked month, since only ended months are locked.
func backdated(date, now time.Time) bool {
	return date.Before(time.Time(document.MonthOf(gst.DateIST(now))))
}

// guardHorizon is how close to the end of an invoice's month (by the
// process's clock when its batch starts) a batch queues the period guard
// although the date is not yet backdated: the guard itself then judges by
// the database's clock at the guarded statement (periodMargin), so a month
// that ends while the batch waits for its counter rows is caught. An hour
// covers the documented clock tolerance between processes and the
// database (1 s, docs/api.md "Clocks") and any wait of a batch before its
// writes by far; outside the last hour of a month the common invoice still
// costs nothing.
const guardHorizon = time.Hour

// nearMonthEnd reports whether date lies before the month of now plus
// guardHorizon (IST): the invoice's month has ended, or may have by the
// time the batch reaches its guarded statement.
func nearMonthEnd(date, now time.Time) bool {
	return backdated(date, now.Add(guardHorizon))
}

// periodMargin is, in the SQL of the guard, how close to its month's end
// by the database's clock (clock_timestamp()) an invoice takes its
// seller's period lock shared: a LockPeriod of that month, which requires
// the month to have ended by the same clock, then waits until the
// invoice's transaction ends. Only a transaction that stays open for more
// than the margin after its guard could commit after such a lock without
// having been checked against it; the server's own batches commit in the
// guard's round trip.
const periodMargin = "1 minute"

func lockedError(m document.Month) *apperr.Error {
	return apperr.Errorf(ErrPeriodLocked, "%s is locked: its GSTR-1 is filed, so no invoice dated in it may be issued or cancelled; to correct an invoice of that month, issue a credit or debit note dated today", m)
}
