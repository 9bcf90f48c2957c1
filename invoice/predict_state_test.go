package invoice

import (
	"testing"
	"time"

	"github.com/invoiced/invoiced/series"
)

// TestRowStateBookkeeping: a row's state keeps the newest remembered
// state, is predictable only with no transaction running and no recent
// misprediction, leaves the map by its one rule (idle), and panics on a
// transaction ending that never began.
func TestRowStateBookkeeping(t *testing.T) {
	t.Parallel()
	c := &Committer{rows: map[rowKey]*rowState{}}
	rk := rowKey{Series: 1, Year: 2026}
	now := time.Now()
	r := c.row(rk)
	if r.predictable(now) {
		t.Error("a row with no remembered state is predictable")
	}
	r.remember(series.State{LastSerial: 5, ChainLength: 5})
	r.remember(series.State{LastSerial: 4, ChainLength: 4}) // finished out of order
	if r.last.LastSerial != 5 || !r.predictable(now) {
		t.Errorf("remembered %+v, predictable %v; want serial 5, true", r.last, r.predictable(now))
	}
	r.txBegan()
	if r.predictable(now) {
		t.Error("a row with a transaction running is predictable")
	}
	r.txEnded()
	r.forget(now.Add(time.Second))
	if r.predictable(now) || r.idle(now) {
		t.Error("a row forgotten until later is predictable or idle")
	}
	c.tidy(rk, now)
	if c.rows[rk] == nil {
		t.Error("tidy removed a row that is not idle")
	}
	c.tidy(rk, now.Add(time.Second))
	if c.rows[rk] != nil {
		t.Error("tidy kept an idle row")
	}
	defer func() {
		if recover() == nil {
			t.Error("a transaction ended without beginning, and nothing panicked")
		}
	}()
	(&rowState{}).txEnded()
}
