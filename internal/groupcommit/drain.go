package groupcommit

import (
	"slices"
	"time"
)

// startShared starts a shared drainer. s.mu must be held and fewer than
// InFlight running.
func (s *Scheduler[T]) startShared() {
	if s.shared >= s.cfg.InFlight {
		panic("groupcommit: more shared drainers than InFlight")
	}
	s.shared++
	go s.drainShared()
}

// startSolo starts the own drainer of row r. s.mu must be held.
func (s *Scheduler[T]) startSolo(r Row) {
	st := s.row(r)
	if st.drainer {
		panic("groupcommit: a second drainer for one row")
	}
	st.drainer = true
	go s.drainSolo(r)
}

// drainShared commits batches over every shared queue until none has
// items it may take.
func (s *Scheduler[T]) drainShared() {
	for {
		s.mu.Lock()
		parts, keys, taken := s.selectShared(s.cfg.Now())
		if taken == 0 {
			// selectShared removed every queue it emptied; the rest hold
			// items that wait for a reserved row (release starts a
			// drainer when it ends), or are solo.
			if s.shared--; s.shared < 0 {
				panic("groupcommit: shared drainers below zero")
			}
			s.mu.Unlock()
			return
		}
		s.most = max(s.most, taken)
		s.mu.Unlock()
		s.commitShared(parts, keys)
	}
}

// selectShared selects the next shared batch: from each shared queue whose
// row no other batch has reserved, oldest date first, at most one date per
// row, up to MaxBatch items in all. It returns the items taken per queue,
// their keys and how many there are, and reserves their rows. Rows batched
// alone for now get their own drainer. With OneOwner, the batch takes the
// queues of the owner (Config.Group: the owners of the group) of the first
// queue it takes only. s.mu must be held.
func (s *Scheduler[T]) selectShared(now time.Time) (parts [][]T, keys []Key, taken int) {
	// Oldest date first, so that a row's dates are committed in date
	// order.
	order := make([]Key, 0, len(s.queues))
	for k := range s.queues {
		if !s.solo(k.Row) {
			order = append(order, k)
		}
	}
	slices.SortFunc(order, func(a, b Key) int { return a.Date.Compare(b.Date) })
	var owner int64
	for _, k := range order {
		if taken >= s.cfg.MaxBatch {
			break
		}
		r := k.Row
		st := s.rows[r]
		if st != nil && st.drainer {
			continue // made solo by an earlier queue of this selection
		}
		if st != nil && now.Before(st.soloUntil) {
			s.startSolo(r)
			continue
		}
		// One transaction per row at a time: a row reserved by another
		// batch, or by an older date of this selection (one date per row
		// in a transaction), waits for the next batch.
		if st != nil && st.reserved {
			continue
		}
		if s.cfg.OneOwner && taken > 0 && s.groupOf(r.Owner) != owner {
			continue // the next batch's
		}
		owner = s.groupOf(r.Owner)
		s.reserve(r)
		items := s.take(k, s.cfg.MaxBatch-taken)
		parts = append(parts, items)
		keys = append(keys, k)
		taken += len(items)
	}
	return parts, keys, taken
}

// drainSolo commits batches for the queues of row r, oldest date first,
// until they are empty or the row is reserved by another batch (whose
// release starts the drainer again).
func (s *Scheduler[T]) drainSolo(r Row) {
	for {
		s.mu.Lock()
		st := s.rows[r]
		var k Key
		found := false
		if !st.reserved {
			for qk := range s.queues {
				if qk.Row == r && (!found || qk.Date.Before(k.Date)) {
					k, found = qk, true
				}
			}
		}
		if !found {
			st.drainer = false
			s.tidy(r, s.cfg.Now())
			s.mu.Unlock()
			return
		}
		items := s.take(k, s.cfg.MaxBatch)
		s.reserve(r)
		s.most = max(s.most, len(items))
		s.mu.Unlock()
		s.commit.CommitQueue(items)
		s.release([]Key{k})
	}
}

// commitShared commits one shared batch and, when the Committer splits it,
// commits each part again in a goroutine of its own, the part's row
// reserved until that ends; the other rows are released at once.
func (s *Scheduler[T]) commitShared(parts [][]T, keys []Key) {
	split := s.commit.CommitShared(parts, keys)
	if split.Retry == nil {
		s.release(keys)
		return
	}
	if len(split.Retry) != len(parts) {
		panic("groupcommit: a Split's Retry is not parallel to the batch's parts")
	}
	if split.Isolate {
		s.mu.Lock()
		until := s.cfg.Now().Add(s.cfg.SoloFor)
		for _, k := range keys {
			s.row(k.Row).soloUntil = until
		}
		s.mu.Unlock()
	}
	for i, rest := range split.Retry {
		if len(rest) == 0 {
			s.release(keys[i : i+1])
			continue
		}
		go func() {
			defer s.release(keys[i : i+1])
			s.commit.CommitQueue(rest)
		}()
	}
}

// release ends the reservation of the rows of keys and makes sure that
// items waiting for them are served: by the row's own drainer when it is
// batched alone, by a shared drainer otherwise.
func (s *Scheduler[T]) release(keys []Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		st := s.rows[k.Row]
		if st == nil || !st.reserved {
			panic("groupcommit: a counter row released without its reservation")
		}
		st.reserved = false
	}
	now := s.cfg.Now()
	for _, k := range keys {
		r := k.Row
		st := s.rows[r]
		if st == nil { // a second key of the row, tidied below
			continue
		}
		if !st.drainer && now.Before(st.soloUntil) && s.hasQueue(r) {
			s.startSolo(r)
		}
		s.tidy(r, now)
	}
	if s.shared < s.cfg.InFlight {
		for qk := range s.queues {
			if !s.solo(qk.Row) {
				s.startShared()
				break
			}
		}
	}
}

// hasQueue reports whether a queue of row r holds items. s.mu must be held.
func (s *Scheduler[T]) hasQueue(r Row) bool {
	for qk := range s.queues {
		if qk.Row == r {
			return true
		}
	}
	return false
}

// groupOf returns the group of owner (Config.Group), owner itself without
// one.
func (s *Scheduler[T]) groupOf(owner int64) int64 {
	if s.cfg.Group == nil {
		return owner
	}
	return s.cfg.Group(owner)
}
