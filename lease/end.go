package lease

import (
	"context"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/series"
	"time"
)

// EndRequest is one request to end a series' lease, as DELETE
// /v1/series/{code}/lease carries it: which of the four ends it asks for
// follows from which fields it holds (Kind), and EndLease runs it. Nil
// pointers and slices are fields not sent.
type EndRequest struct {
	// LeaseID is the device's credential (the Lease-Id header); set only
	// when the device itself ends its lease.
	LeaseID string
	// FY and LastSerial: the device's end, everything it numbered up to
	// LastSerial in FY ("2026-27") uploaded.
	FY         string
	LastSerial *int64
	// EndEpoch: the lease's end_epoch the device journaled its end with
	// (docs/offline.md); optional, the device's only.
	EndEpoch *int64
	// Force ends the lease of a lost device (the seller's).
	Force bool
	// Declared settles a forced end, a serial for each year the lease
	// reserves (the seller's); DeclaredThrough, one serial (what older
	// clients sent for a lease of one year), is refused by SettleLease.
	DeclaredThrough *int64
	Declared        []YearSerial
	// Seal seals the chain records of a settlement's declarations
	// (invoice.DeclarationSeal); required to settle.
	Seal series.Seal
	// Reason is the seller's, required to force or settle.
	Reason string
}

// YearSerial is a settlement's last serial of one year (FY as "2026-27").
type YearSerial struct {
	FY      string
	Through int64
}

// EndKind names the end an EndRequest asks for.
type EndKind int

// The ends of a lease, as Kind names them.
const (
	EndDevice      EndKind = iota + 1 // the device's end (EndLeaseByDevice)
	EndForce                          // a lost device's lease ended by the seller (ForceEndLease)
	EndSettle                         // a forced end settled through one serial (SettleLease)
	EndSettleYears                    // a forced end settled year by year (SettleLeaseYears)
)

// Kind returns the end r asks for: with a LeaseID, the device's, which
// takes FY and LastSerial (EndEpoch optional) and neither Force nor
// DeclaredThrough; without one, exactly one of Force, DeclaredThrough and
// Declared, never with a LastSerial or an EndEpoch. Anything else is
// ErrInvalidLease saying what to send. It does not parse FY or Declared
// (EndLease does).
func (r EndRequest) Kind() (EndKind, error) {
	switch {
	case r.LeaseID != "":
		if r.LastSerial == nil || r.Force || r.DeclaredThrough != nil {
			return 0, apperr.Errorf(ErrInvalidLease, "a device ends its lease with fy and last_serial only")
		}
		return EndDevice, nil
	case r.EndEpoch != nil:
		return 0, apperr.Errorf(ErrInvalidLease, "end_epoch is sent by the device, with its Lease-Id")
	case r.Force && r.DeclaredThrough == nil && r.Declared == nil && r.LastSerial == nil:
		return EndForce, nil
	case !r.Force && r.DeclaredThrough != nil && r.Declared == nil && r.LastSerial == nil:
		return EndSettle, nil
	case !r.Force && r.DeclaredThrough == nil && r.Declared != nil && r.LastSerial == nil:
		return EndSettleYears, nil
	}
	return 0, apperr.Errorf(ErrInvalidLease, "send a Lease-Id with fy and last_serial (the device), \"force\": true with a reason (a lost device), or declared_through or declared (one serial per year) with a reason (settling a forced end)")
}

// EndLease ends s's lease as r asks (Kind), by the seller's key or user
// by (the device's end records none), at now. It returns the lease after;
// it fails as Kind does, with ErrInvalidLease for a bad FY or Declared
// (each year once, a serial of 0 or more), or as the end it runs does.
func EndLease(ctx context.Context, b db.Beginner, s gst.Series, r EndRequest, by string, now time.Time) (Lease, error) {
	kind, err := r.Kind()
	if err != nil {
		return Lease{}, err
	}
	switch kind {
	case EndDevice:
		fy, err := gst.ParseFY(r.FY)
		if err != nil {
			return Lease{}, apperr.Errorf(ErrInvalidLease, "fy: %s", apperr.MessageOf(err))
		}
		return EndLeaseByDevice(ctx, b, s, r.LeaseID, fy, *r.LastSerial, r.EndEpoch, now)
	case EndForce:
		return ForceEndLease(ctx, b, s, r.Reason, by, now)
	case EndSettle:
		return SettleLease(ctx, b, s, *r.DeclaredThrough, r.Reason, by, now)
	}
	declared, err := parseDeclared(r.Declared)
	if err != nil {
		return Lease{}, err
	}
	return SettleLeaseYears(ctx, b, s, declared, r.Reason, by, now, r.Seal)
}

// parseDeclared returns a settlement's serials per year; ErrInvalidLease
// for a bad or repeated year or a negative serial.
func parseDeclared(in []YearSerial) (map[gst.FY]int64, error) {
	out := make(map[gst.FY]int64, len(in))
	for i, d := range in {
		fy, err := gst.ParseFY(d.FY)
		if err != nil {
			return nil, apperr.Errorf(ErrInvalidLease, "declared[%d].fy: %s", i, apperr.MessageOf(err))
		}
		if _, dup := out[fy]; dup || d.Through < 0 {
			return nil, apperr.Errorf(ErrInvalidLease, "declared[%d]: each year once, with a serial of 0 or more", i)
		}
		out[fy] = d.Through
	}
	return out, nil
}
