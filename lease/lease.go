package lease

import (
	"regexp"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/textcut"
)

// Errors of leases (docs/offline.md). Match them with errors.Is.
var (
	ErrLeaseHeld     = apperr.New(apperr.Conflict, "lease_held", "the series is already leased to a device")
	ErrLeaseNotFound = apperr.New(apperr.NotFound, "lease_not_found", "no such lease of this series")
	ErrLeaseNotHeld  = apperr.New(apperr.Conflict, "lease_not_held", "the lease has ended")
	ErrNotUploaded   = apperr.New(apperr.Conflict, "lease_not_uploaded", "the device has not uploaded every invoice up to its last serial")
	ErrInvalidLease  = apperr.New(apperr.Invalid, "invalid_lease", "the lease request is not valid")
	// ErrLeaseYearsUndeclared: a settlement of a lease that spans several
	// financial years must declare each of them.
	ErrLeaseYearsUndeclared = apperr.New(apperr.Invalid, "lease_years_undeclared", "the lease spans several financial years: declare the last serial the device may have issued in each")
	// ErrEndSuperseded: a device's end carried an end epoch older than
	// the lease's: the device resumed after sending it, so it is not done.
	ErrEndSuperseded = apperr.New(apperr.Conflict, "lease_end_superseded", "the device resumed its lease after this end was sent: the lease holds; end it again with the lease's end_epoch")
	// ErrDeclaredTooLow: a settlement declares, for a year, fewer serials
	// than the server knows the device numbered: the last one it uploaded,
	// or the last one it reported in an end request.
	ErrDeclaredTooLow = apperr.New(apperr.Invalid, "declared_too_low", "the declaration is below the last serial the device uploaded or reported: those numbers were printed and may not be issued again")
)

// LeaseYears is how many financial years a lease reserves: the year of
// its floor (NotBefore) and the next. The device numbers in no other year
// (a till offline across 1 April continues into the next), uploads are
// refused outside them, and a forced end and its settlement cover exactly
// them (docs/offline.md, "Invariants").
const LeaseYears = 2

// Lease end kinds.
const (
	EndByDevice = "device"
	EndForced   = "forced"
)

// Position is where a series-year's chain stands: the next serial to
// issue and the hash of the last record (nil for an empty chain).
type Position struct {
	FY          gst.FY
	Serial      int64
	ChainLength int64 // records in the chain so far; the next is at ChainLength+1
	ChainHead   []byte
	// LastIssuedAt is the last invoice's issue time (zero when none): the
	// next may not be earlier.
	LastIssuedAt time.Time
}

// Lease is a series leased to one device, which numbers it alone until
// the lease is settled.
type Lease struct {
	ID       string // ls_…, sent back by the device as Lease-Id
	SeriesID int64
	DeviceID string
	LeasedAt time.Time
	LeasedBy string
	// Next is where the device continues when the lease is taken: the
	// position of its first year (Years()[0]). Of a lease read back, only
	// FY and Serial (start_fy, start_serial) are kept.
	Next Position
	// Start, given when the lease is taken, is the position of each year
	// the lease reserves (Years), in order: the device numbers each from
	// its own, never from serial 1 of a year it assumes empty. Not stored.
	Start []Position
	// NotBefore, given when the lease is taken, is the earliest issue
	// time the device may use: the later of the server's time at the lease
	// and the series' last issue time in any year. Not stored.
	NotBefore time.Time
	// TakeKey is the Idempotency-Key the lease was taken with ("" for
	// none): the same request again answers the lease again while the
	// device has not been in touch (TakeLeaseKeyed).
	TakeKey string

	// LastContactAt is when the server last accepted an upload, a resume
	// or an end request of the device (nil: never, since it was taken).
	LastContactAt *time.Time
	// ReportedFY and ReportedSerial are the last serial the device
	// reported having numbered (its end request's fy and last_serial,
	// recorded even when the end was refused); ReportedSerial 0: never.
	ReportedFY     gst.FY
	ReportedSerial int64

	// EndEpoch counts the device's resumes (ResumeLease): a device's
	// end carries the epoch it was asked at and is refused when the
	// lease's has moved on since.
	EndEpoch int64

	EndedAt   *time.Time
	EndKind   string // EndByDevice or EndForced; empty while held
	EndedBy   string
	EndReason string
	// EndFY and EndSerial: the device's last serial, or for a forced end
	// the last serial uploaded, when the lease ended.
	EndFY     gst.FY
	EndSerial int64
	// EndYears is, for a forced end, the last serial uploaded in each
	// year the lease reserves.
	EndYears map[gst.FY]int64

	SettledAt    *time.Time
	SettledBy    string
	SettleReason string
	// DeclaredThrough is, for a settled forced end, the last serial the
	// device may have issued (EndFY); serials after EndSerial up to it
	// were never uploaded and are declared cancelled.
	DeclaredThrough int64
	// DeclaredYears is, for a settled lease, the last serial the device
	// may have issued in each year the lease reserves.
	DeclaredYears map[gst.FY]int64
}

// StartFY returns the financial year the lease started in.
func (l Lease) StartFY() gst.FY { return l.Next.FY }

// Years returns the financial years the lease reserves, in order: its
// start year and the next (LeaseYears of them).
func (l Lease) Years() []gst.FY {
	out := make([]gst.FY, LeaseYears)
	for i := range out {
		out[i] = l.StartFY() + gst.FY(i)
	}
	return out
}

// Reserves reports whether fy is one of the years the lease reserves.
func (l Lease) Reserves(fy gst.FY) bool {
	return fy >= l.StartFY() && fy < l.StartFY()+LeaseYears
}

// Known returns the last serial the server knows the device numbered in
// fy: the last one stored there (uploaded, or numbered before the lease),
// or the one the device reported for fy in an end request when that is
// later. A settlement may declare no less.
func (l Lease) Known(fy gst.FY, stored int64) int64 {
	if l.ReportedSerial > 0 && l.ReportedFY == fy {
		return max(stored, l.ReportedSerial)
	}
	return stored
}

// Holds reports whether l still holds its series: not ended, or ended by
// force and not yet settled.
func (l Lease) Holds() bool { return l.SettledAt == nil }

var deviceRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckDeviceID returns ErrInvalidLease unless id is 1 to 64 characters of
// letters, digits, '.', '_' and '-', starting with a letter or digit.
func CheckDeviceID(id string) error {
	if !deviceRE.MatchString(id) {
		return apperr.Errorf(ErrInvalidLease, "device_id %q must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' and '-', starting with a letter or digit", textcut.To(id, textcut.Echo))
	}
	return nil
}
