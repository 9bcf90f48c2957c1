package gst

import (
	"fmt"
	"strconv"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
)

// IST is India Standard Time, UTC+05:30 all year. It is a fixed zone so that
// no time zone database is needed.
var IST = time.FixedZone("IST", 5*3600+1800)

// FY is an Indian financial year, 1 April to 31 March, named by the calendar
// year it starts in: FY(2026) is 2026-27.
//
// Civil dates (an invoice date, the first and last day of a year) are
// time.Time values at 00:00 UTC of that calendar day, as pgx scans an SQL
// date.
type FY int

// The financial years invoiced numbers: GST began in July 2017, and
// two-digit years stop being unambiguous after 2099-00.
const (
	MinFY FY = 2017
	MaxFY FY = 2099
)

// Valid reports whether f is within MinFY..MaxFY.
func (f FY) Valid() bool { return f >= MinFY && f <= MaxFY }

// FYOf returns the financial year of the civil date date, read from its
// year, month and day in date's own location: April or later belongs to the
// year starting that calendar year, January to March to the one before.
func FYOf(date time.Time) FY {
	y, m, _ := date.Date()
	if m >= time.April {
		return FY(y)
	}
	return FY(y - 1)
}

// FYAt returns the financial year of the instant t, taken in IST:
// 2026-03-31T18:30:00Z is 1 April 2026 IST and so in 2026-27.
func FYAt(t time.Time) FY { return FYOf(t.In(IST)) }

// DateIST returns the calendar date in IST of the instant t, as a civil date
// (00:00 UTC of that day).
func DateIST(t time.Time) time.Time {
	y, m, d := t.In(IST).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// ParseDate returns the civil date (00:00 UTC) written in s as YYYY-MM-DD,
// exactly ten characters. It fails with ErrInvalidDate for any other shape
// (a time part, a sign, missing zero padding) and for days that do not exist,
// such as 2026-02-29.
func ParseDate(s string) (time.Time, error) {
	ok := len(s) == 10
	for i := 0; ok && i < len(s); i++ {
		if i == 4 || i == 7 {
			ok = s[i] == '-'
		} else {
			ok = isASCIIDigit(s[i])
		}
	}
	if !ok {
		return time.Time{}, apperr.Errorf(ErrInvalidDate, "date %q must look like 2026-04-01", s)
	}
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, apperr.Errorf(ErrInvalidDate, "date %s is not a day of the calendar", s)
	}
	return d, nil
}

// String returns f as written in GST returns, "2026-27".
func (f FY) String() string {
	if f < 1000 || f > 9998 {
		return fmt.Sprintf("%d-%02d", int(f), (int(f)+1)%100)
	}
	// What the Sprintf writes, without it: issuing writes a year into
	// every chain record and every answer.
	next := (int(f) + 1) % 100
	b := strconv.AppendInt(make([]byte, 0, 7), int64(f), 10)
	return string(append(b, '-', byte('0'+next/10), byte('0'+next%10)))
}

// Short returns f with two-digit years, "26-27": always five characters for
// a valid f. It is what a {FY} placeholder renders.
func (f FY) Short() string {
	if f < 0 || f > 9998 {
		return fmt.Sprintf("%02d-%02d", int(f)%100, (int(f)+1)%100)
	}
	y, next := int(f)%100, (int(f)+1)%100
	return string([]byte{byte('0' + y/10), byte('0' + y%10), '-', byte('0' + next/10), byte('0' + next%10)})
}

// ParseFY returns the financial year written in s as "2026-27": four digits,
// '-', and the last two digits of the following year. It fails with
// ErrInvalidDate for any other shape, a second half that does not follow the
// first, or a year outside MinFY..MaxFY.
func ParseFY(s string) (FY, error) {
	ok := len(s) == 7 && s[4] == '-'
	for i := 0; ok && i < len(s); i++ {
		ok = i == 4 || isASCIIDigit(s[i])
	}
	if !ok {
		return 0, apperr.Errorf(ErrInvalidDate, "financial year %q must look like 2026-27", s)
	}
	start := 0
	for _, c := range s[:4] {
		start = start*10 + int(c-'0')
	}
	end := int(s[5]-'0')*10 + int(s[6]-'0')
	if end != (start+1)%100 {
		return 0, apperr.Errorf(ErrInvalidDate, "financial year %s must look like 2026-27: %d is followed by %02d, not %02d", s, start, (start+1)%100, end)
	}
	f := FY(start)
	if !f.Valid() {
		return 0, apperr.Errorf(ErrInvalidDate, "financial year %s is outside %s to %s", s, MinFY, MaxFY)
	}
	return f, nil
}

// Start returns 1 April of f, the first day of the year, as a civil date.
func (f FY) Start() time.Time { return time.Date(int(f), time.April, 1, 0, 0, 0, 0, time.UTC) }

// End returns 31 March after f's start, the last day of the year, as a civil
// date.
func (f FY) End() time.Time { return time.Date(int(f)+1, time.March, 31, 0, 0, 0, 0, time.UTC) }
