package groupcommit

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/testwait"
)

// recorder is a Committer that records what it is given. Each commit
// waits until hold is false, fails rows in failing (Split), and counts the
// commits running per row, so a test sees any two overlap.
type recorder struct {
	mu        sync.Mutex
	cond      *sync.Cond
	hold      bool
	committed []int        // items, in commit order
	shared    [][]Key      // the keys of each shared batch
	queued    [][]int      // the items of each CommitQueue
	sizes     []int        // items per commit
	running   map[Row]int  // commits running per row
	overlap   int          // most commits running on one row at once
	inFlight  int          // commits running
	most      int          // most commits running at once
	failing   map[Row]bool // rows whose shared batch is split
	isolate   bool         // Split.Isolate for a split
	rowOf     map[int]Row  // the row of each item
	rowsMu    sync.Mutex
	splits    atomic.Int64
	batches   [][]int // the items of each commit
}

func newRecorder() *recorder {
	r := &recorder{running: map[Row]int{}, failing: map[Row]bool{}, rowOf: map[int]Row{}}
	r.cond = sync.NewCond(&r.mu)
	return r
}

// begin waits while r holds, then counts a commit on rows running.
func (r *recorder) begin(rows []Row, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.hold {
		r.cond.Wait()
	}
	for _, row := range rows {
		r.running[row]++
		r.overlap = max(r.overlap, r.running[row])
	}
	r.inFlight++
	r.most = max(r.most, r.inFlight)
	r.sizes = append(r.sizes, n)
}

func (r *recorder) end(rows []Row, items []int) {
	time.Sleep(time.Millisecond) // let others try to overlap
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, row := range rows {
		r.running[row]--
	}
	r.inFlight--
	r.committed = append(r.committed, items...)
	r.batches = append(r.batches, slices.Clone(items))
}

func (r *recorder) setHold(h bool) {
	r.mu.Lock()
	r.hold = h
	r.mu.Unlock()
	r.cond.Broadcast()
}

func (r *recorder) CommitShared(parts [][]int, keys []Key) Split[int] {
	rows := make([]Row, len(keys))
	for i, k := range keys {
		rows[i] = k.Row
	}
	var all []int
	for _, p := range parts {
		all = append(all, p...)
	}
	r.begin(rows, len(all))
	r.mu.Lock()
	r.shared = append(r.shared, slices.Clone(keys))
	// The parts of failing rows are handed back; the others count as
	// committed.
	var split Split[int]
	var done []int
	for i, row := range rows {
		if !r.failing[row] {
			done = append(done, parts[i]...)
			continue
		}
		if split.Retry == nil {
			split.Retry, split.Isolate = make([][]int, len(parts)), r.isolate
		}
		split.Retry[i] = parts[i]
	}
	r.mu.Unlock()
	if split.Retry != nil {
		r.splits.Add(1)
	}
	r.end(rows, done)
	return split
}

func (r *recorder) CommitQueue(items []int) {
	r.rowsMu.Lock()
	row := r.rowOf[items[0]]
	r.rowsMu.Unlock()
	r.begin([]Row{row}, len(items))
	r.mu.Lock()
	r.queued = append(r.queued, slices.Clone(items))
	r.mu.Unlock()
	r.end([]Row{row}, items)
}

// snapshot returns a copy of the items committed so far.
func (r *recorder) snapshot() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.committed)
}

// clock is a settable clock for solo windows.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

type harness struct {
	s   *Scheduler[int]
	rec *recorder
	clk *clock
	n   int // items enqueued
}

func setup(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{rec: newRecorder(), clk: &clock{}}
	h.clk.ns.Store(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixNano())
	cfg.Now = h.clk.now
	s, err := New[int](cfg, h.rec)
	if err != nil {
		t.Fatal(err)
	}
	h.s = s
	return h
}

var day = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

func key(series int64, date time.Time) Key {
	return Key{Row: Row{Series: series, Year: 2026}, Date: date}
}

// enqueue enqueues n items on k as one Enqueue call and returns them.
func (h *harness) enqueue(k Key, n int) []int {
	items := make([]int, n)
	keys := make([]Key, n)
	h.rec.rowsMu.Lock()
	for i := range items {
		h.n++
		items[i], keys[i] = h.n, k
		h.rec.rowOf[h.n] = k.Row
	}
	h.rec.rowsMu.Unlock()
	h.s.Enqueue(keys, items)
	return items
}

// waitFor waits until cond holds, failing t after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, 10*time.Second, cond, "%s", what)
}

// drained waits until every enqueued item is committed and the
// scheduler is idle, and returns the items in commit order.
func (h *harness) drained(t *testing.T) []int {
	t.Helper()
	waitFor(t, "every item committed", func() bool { return len(h.rec.snapshot()) == h.n && h.s.Pending() == 0 })
	waitFor(t, "the scheduler idle", func() bool {
		h.s.mu.Lock()
		defer h.s.mu.Unlock()
		for _, st := range h.s.rows {
			if st.reserved || st.drainer {
				return false
			}
		}
		return h.s.shared == 0
	})
	return h.rec.snapshot()
}

func TestQueueCommitsInArrivalOrder(t *testing.T) {
	t.Parallel()
	h := setup(t, Config{MaxBatch: 7})
	h.rec.setHold(true)
	k := key(1, day)
	for range 50 {
		h.enqueue(k, 1)
	}
	unit := h.enqueue(k, 12) // one call: never cut
	for range 20 {
		h.enqueue(k, 1)
	}
	h.rec.setHold(false)
	got := h.drained(t)
	for i, v := range got {
		if v != i+1 {
			t.Fatalf("item %d committed at place %d: %v", v, i+1, got)
		}
	}
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	for _, b := range h.rec.batches {
		whole := slices.Contains(b, unit[0])
		if whole && !slices.Contains(b, unit[len(unit)-1]) || !whole && slices.Contains(b, unit[len(unit)-1]) {
			t.Errorf("the Enqueue call of 12 was cut: batch %v", b)
		}
		if !whole && len(b) > 7 {
			t.Errorf("a batch of %d, want at most MaxBatch 7", len(b))
		}
	}
}

func TestEnqueueCallIsNeverCut(t *testing.T) {
	t.Parallel()
	h := setup(t, Config{MaxBatch: 4})
	h.rec.setHold(true)
	k := key(1, day)
	h.enqueue(k, 1) // taken by the first batch, which waits
	waitFor(t, "the first batch", func() bool { return h.s.Pending() == 0 })
	h.enqueue(k, 3)
	h.enqueue(k, 6)
	h.enqueue(k, 2)
	h.rec.setHold(false)
	h.drained(t)
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	// After the first batch, MaxBatch 4 would cut the call of 6 after its
	// first item: the batch takes all of it (3+6), the next the rest.
	if want := []int{1, 9, 2}; !slices.Equal(h.rec.sizes, want) {
		t.Errorf("batch sizes %v, want %v", h.rec.sizes, want)
	}
}

func TestBatchTakesOneDatePerRowOldestFirst(t *testing.T) {
	t.Parallel()
	h := setup(t, Config{})
	h.rec.setHold(true)
	h.enqueue(key(9, day), 1) // the first batch, held
	waitFor(t, "the first batch", func() bool { return h.s.Pending() == 0 })
	yesterday := day.AddDate(0, 0, -1)
	today1 := h.enqueue(key(1, day), 3)
	yest1 := h.enqueue(key(1, yesterday), 2)
	h.enqueue(key(2, day), 2)
	h.rec.setHold(false)
	got := h.drained(t)
	for _, keys := range h.rec.shared {
		rows := map[Row]bool{}
		for _, k := range keys {
			if rows[k.Row] {
				t.Errorf("a batch took two dates of row %v: %v", k.Row, keys)
			}
			rows[k.Row] = true
		}
	}
	// Series 1: yesterday's items before today's.
	if slices.Index(got, yest1[1]) > slices.Index(got, today1[0]) {
		t.Errorf("today's items of series 1 committed before yesterday's: %v", got)
	}
	if len(h.rec.shared) != 3 || len(h.rec.shared[1]) != 2 {
		t.Errorf("shared batches %v; want the held one, then series 1 yesterday with series 2, then series 1 today", h.rec.shared)
	}
}

// TestSelectSharedDropsEmptiedQueues checks the shared drainer's
// selection: the oldest date of a row goes first and alone, MaxBatch is
// honoured, and a queue it empties leaves the scheduler, so that a drainer
// that never stops does not walk every row it ever served on each batch.
func TestSelectSharedDropsEmptiedQueues(t *testing.T) {
	t.Parallel()
	s, err := New[int](Config{MaxBatch: 4}, newRecorder())
	if err != nil {
		t.Fatal(err)
	}
	yesterday := day.AddDate(0, 0, -1)
	ent := func(items ...int) []entry[int] {
		var q []entry[int]
		for _, it := range items {
			q = append(q, entry[int]{item: it, unit: uint64(it)})
		}
		return q
	}
	s.queues = map[Key][]entry[int]{
		key(1, day):       ent(1, 2),
		key(1, yesterday): ent(3),
		key(2, day):       ent(4),
		key(3, day):       ent(5, 6, 7),
	}
	s.mu.Lock()
	parts, keys, taken := s.selectShared(time.Now())
	s.mu.Unlock()
	if taken != 4 {
		t.Fatalf("taken %d, want MaxBatch 4", taken)
	}
	got := map[Key]int{}
	for i, k := range keys {
		got[k] = len(parts[i])
	}
	// Series 1: yesterday's request first, today's wait for the next batch.
	if got[key(1, yesterday)] != 1 || got[key(1, day)] != 0 {
		t.Errorf("series 1: took %v, want only yesterday's request", got)
	}
	if got[key(2, day)]+got[key(3, day)] != 3 {
		t.Errorf("series 2 and 3: took %v, want 3 of their 4 (MaxBatch)", got)
	}
	// Emptied queues are gone; those with items left remain, with what
	// was not taken.
	left := 0
	for k, q := range s.queues {
		if len(q) == 0 {
			t.Errorf("queue %v emptied by the selection is still in the scheduler", k)
		}
		left += len(q)
	}
	if left != 3 || len(s.queues[key(1, day)]) != 2 {
		t.Errorf("%d items left in the queues, series 1 today %d; want 3 and 2", left, len(s.queues[key(1, day)]))
	}
	for _, k := range keys {
		if st := s.rows[k.Row]; st == nil || !st.reserved {
			t.Errorf("row of %v not reserved", k)
		}
	}
}

func TestInFlightLimitAndOneCommitPerRow(t *testing.T) {
	t.Parallel()
	for _, inFlight := range []int{1, 2, 3} {
		h := setup(t, Config{InFlight: inFlight, MaxBatch: 3})
		h.rec.setHold(true)
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 30 {
					h.enqueue(key(int64(w%4), day.AddDate(0, 0, -(i%2))), 1)
				}
			})
		}
		wg.Wait()
		h.rec.setHold(false)
		got := h.drained(t)
		slices.Sort(got)
		for i, v := range got {
			if v != i+1 {
				t.Fatalf("in-flight %d: item %d at %d: lost or committed twice", inFlight, v, i+1)
			}
		}
		h.rec.mu.Lock()
		if h.rec.most > inFlight {
			t.Errorf("in-flight %d: %d commits ran at once", inFlight, h.rec.most)
		}
		if h.rec.overlap > 1 {
			t.Errorf("in-flight %d: %d commits of one row ran at once", inFlight, h.rec.overlap)
		}
		h.rec.mu.Unlock()
	}
}

// TestSplitBatchRetriesItsRowAloneAndReleasesTheOthers: a shared batch
// whose Committer hands one row's part back (its transaction failed for
// that row) has that part retried alone while the row stays reserved;
// the neighbour's row is released at once; with Isolate, the batch's rows
// are served by their own drainers for SoloFor, then shared again.
func TestSplitBatchRetriesItsRowAloneAndReleasesTheOthers(t *testing.T) {
	t.Parallel()
	h := setup(t, Config{})
	bad, good := key(1, day), key(2, day)
	h.rec.failing[bad.Row] = true
	h.rec.isolate = true
	h.rec.setHold(true)
	h.enqueue(key(9, day), 1)
	waitFor(t, "the first batch", func() bool { return h.s.Pending() == 0 })
	badItems := h.enqueue(bad, 3)
	goodItems := h.enqueue(good, 2)
	h.rec.setHold(false)
	got := h.drained(t)
	h.rec.mu.Lock()
	if n := h.rec.splits.Load(); n != 1 {
		t.Errorf("%d batches split, want 1", n)
	}
	if len(h.rec.queued) != 1 || !slices.Equal(h.rec.queued[0], badItems) {
		t.Errorf("retried alone: %v, want the failing row's %v", h.rec.queued, badItems)
	}
	if !slices.Contains(got, goodItems[0]) || !slices.Contains(got, goodItems[1]) {
		t.Errorf("the neighbour's items were not committed: %v", got)
	}
	h.rec.failing = map[Row]bool{}
	nShared, nQueued := len(h.rec.shared), len(h.rec.queued)
	h.rec.mu.Unlock()

	// Within the solo window: both rows of the split batch have their own
	// drainers; another row is batched as before.
	h.enqueue(bad, 1)
	h.enqueue(good, 1)
	h.enqueue(key(4, day), 1)
	h.drained(t)
	h.rec.mu.Lock()
	if len(h.rec.queued) != nQueued+2 || len(h.rec.shared) != nShared+1 {
		t.Errorf("in the solo window: %d solo and %d shared commits, want 2 and 1", len(h.rec.queued)-nQueued, len(h.rec.shared)-nShared)
	}
	nShared = len(h.rec.shared)
	h.rec.mu.Unlock()

	// After it, the row is shared again, and its state leaves the
	// scheduler once it says nothing.
	h.clk.add(DefaultSoloFor)
	h.enqueue(bad, 1)
	h.drained(t)
	h.rec.mu.Lock()
	if len(h.rec.shared) != nShared+1 {
		t.Errorf("after its solo window, the split row's item did not go through a shared batch")
	}
	if h.rec.overlap > 1 {
		t.Errorf("%d commits of one row ran at once", h.rec.overlap)
	}
	h.rec.mu.Unlock()
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if st := h.s.rows[bad.Row]; st != nil {
		t.Errorf("the split row's state is kept after its window: %+v", st)
	}
}

func TestWithdraw(t *testing.T) {
	t.Parallel()
	h := setup(t, Config{})
	h.rec.setHold(true)
	k := key(1, day)
	taken := h.enqueue(k, 1)
	waitFor(t, "the first batch", func() bool { return h.s.Pending() == 0 })
	queued := h.enqueue(k, 3)
	if h.s.Withdraw(k, taken[0]) {
		t.Error("an item a batch took was withdrawn")
	}
	if !h.s.Withdraw(k, queued[1]) {
		t.Error("a queued item could not be withdrawn")
	}
	if n := h.s.Pending(); n != 2 {
		t.Errorf("%d pending after a withdrawal, want 2", n)
	}
	if !h.s.Withdraw(k, queued[0]) || !h.s.Withdraw(k, queued[2]) {
		t.Error("the other queued items could not be withdrawn")
	}
	h.s.mu.Lock()
	if len(h.s.queues) != 0 {
		t.Errorf("an emptied queue is left: %v", h.s.queues)
	}
	h.s.mu.Unlock()
	h.rec.setHold(false)
	h.n = 1 // only the taken item is committed
	if got := h.drained(t); !slices.Equal(got, taken) {
		t.Errorf("committed %v, want only %v", got, taken)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	_, err := New[int](Config{MaxBatch: -1, InFlight: -2, SoloFor: -time.Second}, nil)
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"MaxBatch -1", "InFlight -2", "SoloFor -1s", "no Committer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestBookkeepingPanicsOnTheImpossible(t *testing.T) {
	t.Parallel()
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", what)
			}
		}()
		f()
	}
	s, err := New[int](Config{}, newRecorder())
	if err != nil {
		t.Fatal(err)
	}
	mustPanic("release without reservation", func() { s.release([]Key{key(1, day)}) })
	s.mu.Lock()
	s.reserve(Row{Series: 1})
	mustPanic("reserve twice", func() { s.reserve(Row{Series: 1}) })
	s.mu.Unlock()
	mustPanic("Enqueue of unequal lengths", func() { s.Enqueue([]Key{key(1, day)}, nil) })
}

// TestOneOwnerBatchesOneOwnerAtATime: with OneOwner every shared batch
// takes the queues of one owner, and every item is committed; without it,
// one batch takes the queued rows of several owners (so the property is
// the option's, not the workload's).
func TestOneOwnerBatchesOneOwnerAtATime(t *testing.T) {
	t.Parallel()
	for _, one := range []bool{true, false} {
		h := setup(t, Config{OneOwner: one})
		h.rec.setHold(true)
		h.enqueue(Key{Row: Row{Series: 99, Year: 2026, Owner: 9}, Date: day}, 1) // held
		waitFor(t, "the first batch", func() bool { return h.s.Pending() == 0 })
		for s := int64(1); s <= 12; s++ {
			h.enqueue(Key{Row: Row{Series: s, Year: 2026, Owner: s % 3}, Date: day}, 2)
		}
		h.rec.setHold(false)
		if got := h.drained(t); len(got) != 25 {
			t.Fatalf("OneOwner %v: %d items committed, want 25", one, len(got))
		}
		mixed := 0
		for _, keys := range h.rec.shared {
			for _, k := range keys[1:] {
				if k.Row.Owner != keys[0].Row.Owner {
					mixed++
					break
				}
			}
		}
		if one && mixed > 0 {
			t.Errorf("OneOwner: %d batches mixed owners: %v", mixed, h.rec.shared)
		}
		if !one && mixed == 0 {
			t.Errorf("without OneOwner no batch mixed owners: %v", h.rec.shared)
		}
	}
}

// TestOneOwnerGroupBatchesOneGroupAtATime: with OneOwner and a Group
// (owner modulo 2 here, as sellers hashing into one shard), a batch takes
// the queues of several owners of one group but never of two groups, and
// every item is committed.
func TestOneOwnerGroupBatchesOneGroupAtATime(t *testing.T) {
	t.Parallel()
	group := func(owner int64) int64 { return owner % 2 }
	h := setup(t, Config{OneOwner: true, Group: group})
	h.rec.setHold(true)
	h.enqueue(Key{Row: Row{Series: 99, Year: 2026, Owner: 9}, Date: day}, 1) // held
	waitFor(t, "the first batch", func() bool { return h.s.Pending() == 0 })
	for s := int64(1); s <= 12; s++ {
		h.enqueue(Key{Row: Row{Series: s, Year: 2026, Owner: s % 4}, Date: day}, 2)
	}
	h.rec.setHold(false)
	if got := h.drained(t); len(got) != 25 {
		t.Fatalf("%d items committed, want 25", len(got))
	}
	owners := 0
	for _, keys := range h.rec.shared {
		seen := map[int64]bool{}
		for _, k := range keys {
			seen[k.Row.Owner] = true
			if group(k.Row.Owner) != group(keys[0].Row.Owner) {
				t.Errorf("a batch mixed groups: %v", keys)
			}
		}
		owners = max(owners, len(seen))
	}
	if owners < 2 {
		t.Errorf("no batch took two owners of one group: %v", h.rec.shared)
	}
}
