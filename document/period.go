package document

import (
	"strconv"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
)

// ErrInvalidMonth is returned by ParseMonth for a return period that is
// not one month, MMYYYY.
var ErrInvalidMonth = apperr.New(apperr.Invalid, "invalid_period", "the period must be one month, MMYYYY")

// Month is a calendar month, held as its first day (a civil date, 00:00
// UTC).
type Month time.Time

// MonthOf returns the month of the civil date d.
func MonthOf(d time.Time) Month {
	return Month(time.Date(d.Year(), d.Month(), 1, 0, 0, 0, 0, time.UTC))
}

// ParseMonth reads a month written as GSTR-1's fp, MMYYYY ("112026"). It
// returns ErrInvalidMonth for anything else or a year outside
// gst.MinFY..MaxFY+1.
func ParseMonth(fp string) (Month, error) {
	if len(fp) != 6 {
		return Month{}, apperr.Errorf(ErrInvalidMonth, "period %q must be one month written MMYYYY, e.g. 112026", fp)
	}
	m, err1 := strconv.Atoi(fp[:2])
	y, err2 := strconv.Atoi(fp[2:])
	if err1 != nil || err2 != nil || m < 1 || m > 12 || y < int(gst.MinFY) || y > int(gst.MaxFY)+1 || fp[0] == '+' || fp[2] == '+' {
		return Month{}, apperr.Errorf(ErrInvalidMonth, "period %q must be one month written MMYYYY, e.g. 112026", fp)
	}
	return Month(time.Date(y, time.Month(m), 1, 0, 0, 0, 0, time.UTC)), nil
}

// FP returns the month as MMYYYY.
func (m Month) FP() string { return time.Time(m).Format("012006") }

// String returns the month as "Nov 2026".
func (m Month) String() string { return time.Time(m).Format("Jan 2006") }

// Start returns the month's first day.
func (m Month) Start() time.Time { return time.Time(m) }

// PeriodLock is a locked month of a seller.
type PeriodLock struct {
	Month    Month
	LockedAt time.Time
	LockedBy string // "key ik_<prefix>" or "cli"
}

// PeriodEvent is one lock or unlock of a month.
type PeriodEvent struct {
	Month  Month
	Action string // "lock" or "unlock"
	At     time.Time
	By     string
	Reason string // why it was unlocked; empty for a lock
}
