package invoice

import (
	"testing"
	"time"

	"github.com/invoiced/invoiced/series"
)

// TestTakeSharedSelectsOneDatePerRowAndDropsEmptiedQueues checks the
// shared drainer's selection: the oldest date of a series-year goes first
// and alone, maxBatch is honoured, and a queue it empties leaves c.groups,
// so that a drainer that never stops does not walk every series it ever
// served on each batch.
func TestTakeSharedSelectsOneDatePerRowAndDropsEmptiedQueues(t *testing.T) {
	t.Parallel()
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	req := func(seriesID int64, date time.Time) *call {
		return &call{req: IssueRequest{Series: series.Series{ID: seriesID}, Draft: Draft{InvoiceDate: date}}}
	}
	c := &Committer{MaxBatch: 4}
	c.groups = map[groupKey]*group{
		{1, day}:                   {pending: []*call{req(1, day), req(1, day)}},
		{1, day.AddDate(0, 0, -1)}: {pending: []*call{req(1, day.AddDate(0, 0, -1))}},
		{2, day}:                   {pending: []*call{req(2, day)}},
		{3, day}:                   {pending: []*call{req(3, day), req(3, day), req(3, day)}},
		{4, day}:                   {}, // emptied before: skipped
	}
	parts, keys, taken := c.takeShared(time.Now())
	if taken != 4 {
		t.Fatalf("taken %d, want maxBatch 4", taken)
	}
	got := map[groupKey]int{}
	for i, k := range keys {
		got[k] = len(parts[i])
	}
	// Series 1: yesterday's request first, today's wait for the next batch.
	if got[groupKey{1, day.AddDate(0, 0, -1)}] != 1 || got[groupKey{1, day}] != 0 {
		t.Errorf("series 1: took %v, want only yesterday's request", got)
	}
	if got[groupKey{2, day}]+got[groupKey{3, day}] != 3 {
		t.Errorf("series 2 and 3: took %v, want 3 of their 4 (maxBatch)", got)
	}
	// Emptied queues are gone; those with requests left remain, with what
	// was not taken.
	left := 0
	for k, g := range c.groups {
		if len(g.pending) == 0 && k != (groupKey{4, day}) {
			t.Errorf("queue %v emptied by the selection is still in c.groups", k)
		}
		left += len(g.pending)
	}
	if left != 3 || len(c.groups[groupKey{1, day}].pending) != 2 {
		t.Errorf("%d requests left in c.groups, series 1 today %d; want 3 and 2", left, len(c.groups[groupKey{1, day}].pending))
	}
	for _, k := range keys {
		if c.taken[k.row()] != 1 {
			t.Errorf("row of %v taken %d times, want 1", k, c.taken[k.row()])
		}
	}
}
