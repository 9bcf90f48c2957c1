package series

import (
	"regexp"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/textcut"
)

// Errors of leases (docs/offline.md). Match them with errors.Is.
var (
	ErrLeased        = apperr.New(apperr.Conflict, "series_leased", "the series is leased to an offline device: only that device numbers it until the lease ends")
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
)

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
	// Next is where the device continues when the lease is taken.
	Next Position
	// NotBefore, given when the lease is taken, is the earliest issue
	// time the device may use: the later of the server's time at the lease
	// and the series' last issue time in any year. Not stored.
	NotBefore time.Time

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
	// financial year from the lease's start to the year of the end.
	EndYears map[gst.FY]int64

	SettledAt    *time.Time
	SettledBy    string
	SettleReason string
	// DeclaredThrough is, for a settled forced end, the last serial the
	// device may have issued (EndFY); serials after EndSerial up to it
	// were never uploaded and are declared cancelled.
	DeclaredThrough int64
	// DeclaredYears is, for a settled lease, the last serial the device
	// may have issued in each financial year the settlement covers: from
	// the lease's start to the year of the settlement.
	DeclaredYears map[gst.FY]int64
}

// StartFY returns the financial year the lease started in.
func (l Lease) StartFY() gst.FY { return l.Next.FY }

// YearsThrough returns the financial years from the lease's start to
// last (at least the start year), in order: the years a lease ended or
// settled in last could have numbered.
func (l Lease) YearsThrough(last gst.FY) []gst.FY {
	out := []gst.FY{l.StartFY()}
	for y := l.StartFY() + 1; y <= last; y++ {
		out = append(out, y)
	}
	return out
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
