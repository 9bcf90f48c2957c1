package series_test

import (
	"errors"
	"testing"

	"github.com/invoiced/invoiced/series"
)

// TestEndRequestKind: which end a request asks for follows from its
// fields alone, and every mix the API refused before is refused here,
// with a message naming what to send.
func TestEndRequestKind(t *testing.T) {
	t.Parallel()
	fy, serial, epoch := "2026-27", int64(7), int64(1)
	years := []series.YearSerial{{FY: "2026-27", Through: 7}}
	for _, c := range []struct {
		name string
		r    series.EndRequest
		want series.EndKind
	}{
		{"device", series.EndRequest{LeaseID: "ls_1", FY: fy, LastSerial: &serial}, series.EndDevice},
		{"device with its epoch", series.EndRequest{LeaseID: "ls_1", FY: fy, LastSerial: &serial, EndEpoch: &epoch}, series.EndDevice},
		{"device without last_serial", series.EndRequest{LeaseID: "ls_1", FY: fy}, 0},
		{"settling an empty list of years", series.EndRequest{Declared: []series.YearSerial{}, Reason: "paper"}, series.EndSettleYears},
		{"device forcing", series.EndRequest{LeaseID: "ls_1", FY: fy, LastSerial: &serial, Force: true}, 0},
		{"device settling", series.EndRequest{LeaseID: "ls_1", FY: fy, LastSerial: &serial, DeclaredThrough: &serial}, 0},
		{"seller with an epoch", series.EndRequest{Force: true, EndEpoch: &epoch}, 0},
		{"force", series.EndRequest{Force: true, Reason: "lost"}, series.EndForce},
		{"force with last_serial", series.EndRequest{Force: true, LastSerial: &serial}, 0},
		{"force and settle", series.EndRequest{Force: true, DeclaredThrough: &serial}, 0},
		{"settle through", series.EndRequest{DeclaredThrough: &serial, Reason: "paper"}, series.EndSettle},
		{"settle years", series.EndRequest{Declared: years, Reason: "paper"}, series.EndSettleYears},
		{"settle both ways", series.EndRequest{DeclaredThrough: &serial, Declared: years}, 0},
		{"settle with last_serial", series.EndRequest{DeclaredThrough: &serial, LastSerial: &serial}, 0},
		{"nothing", series.EndRequest{}, 0},
	} {
		got, err := c.r.Kind()
		if got != c.want || (c.want == 0) != errors.Is(err, series.ErrInvalidLease) {
			t.Errorf("%s: Kind() = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}
