package invoice_test

import (
	"testing"
	"time"

	"github.com/invoiced/invoiced/invoice"
)

func TestInFlightFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		rtt      time.Duration
		workers  int
		maxConns int
		want     int
	}{
		{"near database", 200 * time.Microsecond, 0, 20, 1},
		{"exactly 1 ms is near", time.Millisecond, 0, 20, 1},
		{"far database overlaps two", 5 * time.Millisecond, 0, 20, 2},
		{"far database, pool of 3: half is 1", 5 * time.Millisecond, 0, 3, 1},
		{"no ping (rtt 0)", 0, 0, 20, 1},
		{"citus, 2 workers", 0, 2, 20, 4},
		{"citus ignores the round trip", 10 * time.Millisecond, 2, 20, 4},
		{"citus, 8 workers capped at half the pool", 0, 8, 20, 10},
		{"citus, 100 workers capped at MaxInFlight", 0, 100, 1000, invoice.MaxInFlight},
		{"pool of 1 still gets one", 0, 2, 1, 1},
	} {
		if got := invoice.InFlightFor(c.rtt, c.workers, c.maxConns); got != c.want {
			t.Errorf("%s: InFlightFor(%v, %d, %d) = %d, want %d", c.name, c.rtt, c.workers, c.maxConns, got, c.want)
		}
	}
}
