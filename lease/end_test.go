package lease_test

import (
	"errors"
	"github.com/invoiced/invoiced/lease"
	"testing"
)

// TestEndRequestKind: which end a request asks for follows from its
// fields alone, and every mix the API refused before is refused here,
// with a message naming what to send.
func TestEndRequestKind(t *testing.T) {
	t.Parallel()
	fy, serial, epoch := "2026-27", int64(7), int64(1)
	years := []lease.YearSerial{{FY: "2026-27", Through: 7}}
	for _, c := range []struct {
		name string
		r    lease.EndRequest
		want lease.EndKind
	}{
		{"device", lease.EndRequest{LeaseID: "ls_1", FY: fy, LastSerial: &serial}, lease.EndDevice},
		{"device with its epoch", lease.EndRequest{LeaseID: "ls_1", FY: fy, LastSerial: &serial, EndEpoch: &epoch}, lease.EndDevice},
		{"device without last_serial", lease.EndRequest{LeaseID: "ls_1", FY: fy}, 0},
		{"settling an empty list of years", lease.EndRequest{Declared: []lease.YearSerial{}, Reason: "paper"}, lease.EndSettleYears},
		{"device forcing", lease.EndRequest{LeaseID: "ls_1", FY: fy, LastSerial: &serial, Force: true}, 0},
		{"device settling", lease.EndRequest{LeaseID: "ls_1", FY: fy, LastSerial: &serial, DeclaredThrough: &serial}, 0},
		{"seller with an epoch", lease.EndRequest{Force: true, EndEpoch: &epoch}, 0},
		{"force", lease.EndRequest{Force: true, Reason: "lost"}, lease.EndForce},
		{"force with last_serial", lease.EndRequest{Force: true, LastSerial: &serial}, 0},
		{"force and settle", lease.EndRequest{Force: true, DeclaredThrough: &serial}, 0},
		{"settle through", lease.EndRequest{DeclaredThrough: &serial, Reason: "paper"}, lease.EndSettle},
		{"settle years", lease.EndRequest{Declared: years, Reason: "paper"}, lease.EndSettleYears},
		{"settle both ways", lease.EndRequest{DeclaredThrough: &serial, Declared: years}, 0},
		{"settle with last_serial", lease.EndRequest{DeclaredThrough: &serial, LastSerial: &serial}, 0},
		{"nothing", lease.EndRequest{}, 0},
	} {
		got, err := c.r.Kind()
		if got != c.want || (c.want == 0) != errors.Is(err, lease.ErrInvalidLease) {
			t.Errorf("%s: Kind() = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}
