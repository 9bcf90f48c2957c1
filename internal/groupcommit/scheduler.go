package groupcommit

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Row names a counter row: a series and a financial year, and the owner
// of the series (its seller; zero when the Committer does not say). At
// most one transaction of a Scheduler holds a row at a time.
type Row struct {
	Series int64
	Year   int
	Owner  int64
}

// Key names a queue: the requests of one row and invoice date.
type Key struct {
	Row  Row
	Date time.Time
}

// Committer runs the transactions a Scheduler selects. Its methods are
// called from the Scheduler's drainer goroutines, without the Scheduler's
// lock, and must answer every item they are given (or hand it back in a
// Split for a retry).
type Committer[T any] interface {
	// CommitShared commits parts, the selected items of one queue each
	// (keys is parallel; no two keys of one row), in one transaction. It
	// returns what the Scheduler retries: the zero Split when nothing.
	CommitShared(parts [][]T, keys []Key) Split[T]
	// CommitQueue commits items, all of one queue, in arrival order,
	// retrying on its own whatever it retries.
	CommitQueue(items []T)
}

// Split is what a shared batch that failed as a whole hands back.
type Split[T any] struct {
	// Retry, when not nil, is parallel to the batch's parts: each
	// non-empty entry is committed again with CommitQueue, in a goroutine
	// of its own, its row reserved until that ends.
	Retry [][]T
	// Isolate makes the batch's rows be served by drainers of their own
	// for Config.SoloFor (their locks were not had quickly).
	Isolate bool
}

// Config tunes a Scheduler. The zero value of a field means its default.
type Config struct {
	// MaxBatch caps the items a batch takes (default 512).
	MaxBatch int
	// InFlight is how many shared drainers, each running one transaction,
	// may run at once (default 1).
	InFlight int
	// SoloFor is how long a row is batched alone after a Split with
	// Isolate (default 5 s).
	SoloFor time.Duration
	// Now is the clock of solo windows (default time.Now).
	Now func() time.Time
	// OneOwner makes a shared batch take the queues of one Row.Owner
	// only (the owner of its oldest queue), so that its transaction
	// touches one owner's data: on a database sharded by owner (Citus,
	// docs/scale-out.md), one shard group. Off, a batch mixes owners.
	OneOwner bool
	// Group, with OneOwner, widens "one owner" to owners of one group:
	// a batch takes the queues whose owner's group is its first queue's
	// owner's (sellers whose rows live in one shard). It is called with
	// the scheduler's lock held, so it must answer at once (from a
	// cache). Nil makes every owner a group of its own.
	Group func(owner int64) int64
}

// Defaults of Config.
const (
	DefaultMaxBatch = 512
	DefaultInFlight = 1
	DefaultSoloFor  = 5 * time.Second
)

// Scheduler queues items per Key and hands them in batches to a Committer.
// Its methods are safe for concurrent use.
type Scheduler[T comparable] struct {
	cfg    Config
	commit Committer[T]

	mu     sync.Mutex
	queues map[Key][]entry[T] // a queue is removed when it empties
	rows   map[Row]*rowState  // a row is removed when idle (rowState.idle)
	shared int                // shared drainers running
	units  uint64             // Enqueue calls so far
	most   int                // most items taken for one batch
}

// entry is one queued item and the Enqueue call (unit) it came with.
type entry[T any] struct {
	item T
	unit uint64
}

// rowState is what a Scheduler knows about one counter row.
type rowState struct {
	reserved  bool      // a batch holds the row: its transaction and retries run
	drainer   bool      // the row's own drainer runs
	soloUntil time.Time // the row is batched alone until then
}

// idle reports whether r says nothing at now, so that its row may leave
// the map: the one delete rule of Scheduler.rows.
func (r *rowState) idle(now time.Time) bool {
	return !r.reserved && !r.drainer && !now.Before(r.soloUntil)
}

// New returns a Scheduler that hands batches to commit. It fails when a
// field of cfg is negative or commit is nil.
func New[T comparable](cfg Config, commit Committer[T]) (*Scheduler[T], error) {
	var errs []error
	if cfg.MaxBatch < 0 {
		errs = append(errs, fmt.Errorf("groupcommit: MaxBatch %d is negative (0 means %d)", cfg.MaxBatch, DefaultMaxBatch))
	}
	if cfg.InFlight < 0 {
		errs = append(errs, fmt.Errorf("groupcommit: InFlight %d is negative (0 means %d)", cfg.InFlight, DefaultInFlight))
	}
	if cfg.SoloFor < 0 {
		errs = append(errs, fmt.Errorf("groupcommit: SoloFor %v is negative (0 means %v)", cfg.SoloFor, DefaultSoloFor))
	}
	if commit == nil {
		errs = append(errs, errors.New("groupcommit: no Committer"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.InFlight == 0 {
		cfg.InFlight = DefaultInFlight
	}
	if cfg.SoloFor == 0 {
		cfg.SoloFor = DefaultSoloFor
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Scheduler[T]{cfg: cfg, commit: commit, queues: map[Key][]entry[T]{}, rows: map[Row]*rowState{}}, nil
}

// Enqueue appends items to their queues (keys is parallel) and makes sure
// a drainer will take them. The items of one call, where they share a
// queue, are taken by one batch, consecutively.
func (s *Scheduler[T]) Enqueue(keys []Key, items []T) {
	if len(keys) != len(items) {
		panic("groupcommit: Enqueue with keys and items of different lengths")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.units++
	rows := make([]Row, 0, 1)
	for i, k := range keys {
		s.queues[k] = append(s.queues[k], entry[T]{items[i], s.units})
		if !slices.Contains(rows, k.Row) {
			rows = append(rows, k.Row)
		}
	}
	now := s.cfg.Now()
	for _, r := range rows {
		switch st := s.rows[r]; {
		case st != nil && st.drainer:
			// its own drainer is running and will take it
		case st != nil && now.Before(st.soloUntil):
			s.startSolo(r)
		case s.shared < s.cfg.InFlight:
			s.startShared()
		}
	}
}

// Withdraw removes item from queue k and reports whether it was there:
// false means a batch has taken it (a transaction may commit it).
func (s *Scheduler[T]) Withdraw(k Key, item T) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[k]
	i := slices.IndexFunc(q, func(e entry[T]) bool { return e.item == item })
	if i < 0 {
		return false
	}
	if q = slices.Delete(q, i, i+1); len(q) == 0 {
		delete(s.queues, k)
	} else {
		s.queues[k] = q
	}
	return true
}

// Pending returns how many items wait in the queues.
func (s *Scheduler[T]) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, q := range s.queues {
		n += len(q)
	}
	return n
}

// Largest returns the most items one batch has taken.
func (s *Scheduler[T]) Largest() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most
}

// row returns the state of row r, adding it. s.mu must be held.
func (s *Scheduler[T]) row(r Row) *rowState {
	st := s.rows[r]
	if st == nil {
		st = &rowState{}
		s.rows[r] = st
	}
	return st
}

// tidy removes row r's state when it is idle. s.mu must be held.
func (s *Scheduler[T]) tidy(r Row, now time.Time) {
	if st := s.rows[r]; st != nil && st.idle(now) {
		delete(s.rows, r)
	}
}

// solo reports whether row r has its own drainer. s.mu must be held.
func (s *Scheduler[T]) solo(r Row) bool {
	st := s.rows[r]
	return st != nil && st.drainer
}

// reserve reserves row r for a batch. s.mu must be held; the row must be
// free.
func (s *Scheduler[T]) reserve(r Row) {
	st := s.row(r)
	if st.reserved {
		panic("groupcommit: a counter row reserved twice")
	}
	st.reserved = true
}

// take removes the first n items (cut by cutAt) of queue k for a batch and
// returns them. s.mu must be held.
func (s *Scheduler[T]) take(k Key, n int) []T {
	q := s.queues[k]
	n = cutAt(q, min(len(q), n))
	if n <= 0 {
		panic("groupcommit: a batch takes nothing from a queue")
	}
	items := make([]T, n)
	for i, e := range q[:n] {
		items[i] = e.item
	}
	if q = q[n:]; len(q) == 0 {
		delete(s.queues, k)
	} else {
		s.queues[k] = q
	}
	return items
}

// cutAt returns how many entries of q a batch takes when it may take n:
// n, or more to keep the entries of one Enqueue call together (a call holds
// at most what one request may send, so a batch exceeds MaxBatch by less
// than that).
func cutAt[T any](q []entry[T], n int) int {
	for n > 0 && n < len(q) && q[n].unit == q[n-1].unit {
		n++
	}
	return n
}
