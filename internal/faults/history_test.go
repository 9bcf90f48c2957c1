package faults

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// OpType is the kind of a history entry.
type OpType string

// History entry kinds. Every attempt is an Invoke followed by exactly one of
// OK (a 201), Fail (a definite refusal: the attempt numbered nothing, such
// as a 4xx) or Unknown (a transport error or a 5xx: the invoice may or may
// not have been committed). Fault entries mark when a fault began and
// ended.
const (
	Invoke  OpType = "invoke"
	OK      OpType = "ok"
	Fail    OpType = "fail"
	Unknown OpType = "unknown"
	Fault   OpType = "fault"
)

// Op is one history entry.
type Op struct {
	Seq      int
	Type     OpType
	Client   int
	Key      string // Idempotency-Key, which is also the logical request's tag
	Series   string
	Status   int // HTTP status, 0 for a transport error
	Serial   int64
	Number   string
	ID       string // the invoice's id in the API, of an OK
	FY       string
	IssuedAt time.Time
	Replayed bool
	Err      string
	Time     time.Time
}

// History records operations from many goroutines.
type History struct {
	mu  sync.Mutex
	ops []Op
}

// Add appends op, stamping its sequence number and (when unset) its time.
func (h *History) Add(op Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if op.Time.IsZero() {
		op.Time = time.Now()
	}
	op.Seq = len(h.ops)
	h.ops = append(h.ops, op)
}

// Mark records a fault event.
func (h *History) Mark(note string) { h.Add(Op{Type: Fault, Err: note}) }

// Ops returns a copy of the entries.
func (h *History) Ops() []Op { return h.From(0) }

// From returns a copy of the entries from the i-th on (none when there are
// not more than i), for a reader that keeps its place.
func (h *History) From(i int) []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i >= len(h.ops) {
		return nil
	}
	return slices.Clone(h.ops[i:])
}

// Stored is one invoice row as found in the database after the run. Key is
// the tag the test put in the invoice (its first item's description), so
// that two invoices for one request can be told apart from one.
type Stored struct {
	Series   string
	FY       int
	Serial   int64
	Number   string
	IssuedAt time.Time
	Key      string
}

// Report is the outcome of Check.
type Report struct {
	Invokes, Acked, Failed, Unknown int // attempts and their outcomes
	Keys, KeysAcked                 int // logical requests, and how many got a 201
	ResolvedUnknown                 int // keys with an unknown attempt later acknowledged
	ReplayedAfterUnknown            int // of those, answered by a replay (committed before the reply was lost)
	Stored                          int
	Status                          map[int]int // attempts by HTTP status (0 = transport error)
	Violations                      []string
	Lost                            []string // keys acknowledged but not stored (also among Violations)
}

// OK reports whether no invariant was broken.
func (r Report) OK() bool { return len(r.Violations) == 0 }

// Line is the fixed-format summary printed by every fault test.
func (r Report) Line(name string) string {
	verdict := "PASS"
	if !r.OK() {
		verdict = fmt.Sprintf("FAIL(%d)", len(r.Violations))
	}
	st := make([]int, 0, len(r.Status))
	for s := range r.Status {
		st = append(st, s)
	}
	sort.Ints(st)
	var sb strings.Builder
	for _, s := range st {
		fmt.Fprintf(&sb, " %d:%d", s, r.Status[s])
	}
	return fmt.Sprintf("FAULTS %s ops=%d acked=%d failed=%d unknown=%d keys=%d keys_acked=%d unknown_resolved=%d replayed_after_unknown=%d stored=%d invariants=%s statuses=[%s]",
		name, r.Invokes, r.Acked, r.Failed, r.Unknown, r.Keys, r.KeysAcked, r.ResolvedUnknown, r.ReplayedAfterUnknown, r.Stored, verdict, strings.TrimSpace(sb.String()))
}

// CheckOptions tune Check.
type CheckOptions struct {
	// RequireAllAcked: every key in the history must end with a 201
	// (the clients retried until they succeeded).
	RequireAllAcked bool
	// AllowForeign: stored invoices whose key is not in the history are
	// allowed (written by someone else, such as a test's own setup).
	AllowForeign bool
}

// Check checks the history ops against the invoices stored, for the
// invariants of docs/faults.md:
//
//  1. every acknowledged invoice is stored, with the number, serial and
//     issue time it was acknowledged with (no lost ack), and every 201 for
//     one key names the same invoice;
//  2. each series-year's serials are exactly 1..N (no gap, no duplicate)
//     and numbers are unique;
//  3. at most one invoice is stored per key, exactly one for an
//     acknowledged key, none for a key whose every attempt definitely
//     failed; no invoice appears that no request asked for;
//  4. (of docs/counter.md) issue times never go backwards in serial order
//     within a series-year;
//  5. a definitive refusal for a key (any Fail but 409
//     idempotency_key_in_progress, which says "retry later", and 409
//     period_locked and series_leased, which are not final) is never
//     followed, or preceded, by an invoice for that key, even when another
//     attempt of the key had an unknown outcome: a client that trusts the
//     refusal issues the sale again under a new key.
func Check(ops []Op, stored []Stored, opt CheckOptions) Report {
	r := Report{Status: map[int]int{}, Stored: len(stored)}
	bad := func(format string, a ...any) {
		if len(r.Violations) < 50 {
			r.Violations = append(r.Violations, fmt.Sprintf(format, a...))
		}
	}

	type keyState struct {
		acks                     []Op
		invokes, fails, unknowns int
		unknownBeforeAck         bool
		refusal                  *Op // the first definitive refusal
	}
	keys := map[string]*keyState{}
	var order []string
	open := map[int]int{} // client -> pending invokes
	for _, op := range ops {
		if op.Type == Fault {
			continue
		}
		ks := keys[op.Key]
		if ks == nil {
			ks = &keyState{}
			keys[op.Key] = ks
			order = append(order, op.Key)
		}
		switch op.Type {
		case Invoke:
			r.Invokes++
			ks.invokes++
			open[op.Client]++
		case OK:
			r.Acked++
			r.Status[op.Status]++
			if ks.unknowns > 0 && len(ks.acks) == 0 {
				ks.unknownBeforeAck = true
				r.ResolvedUnknown++
				if op.Replayed {
					r.ReplayedAfterUnknown++
				}
			}
			ks.acks = append(ks.acks, op)
			open[op.Client]--
		case Fail:
			r.Failed++
			r.Status[op.Status]++
			ks.fails++
			open[op.Client]--
			if ks.refusal == nil && definitive(op) {
				ks.refusal = &op
			}
		case Unknown:
			r.Unknown++
			r.Status[op.Status]++
			ks.unknowns++
			open[op.Client]--
		default:
			bad("history entry %d has unknown type %q", op.Seq, op.Type)
		}
	}
	for c, n := range open {
		if n != 0 {
			bad("client %d: %d invoke(s) without a completion", c, n)
		}
	}
	r.Keys = len(keys)

	// Stored invoices by key and by series-year.
	byKey := map[string][]Stored{}
	type sy struct {
		series string
		fy     int
	}
	bySY := map[sy][]Stored{}
	numbers := map[string]Stored{}
	for _, s := range stored {
		byKey[s.Key] = append(byKey[s.Key], s)
		bySY[sy{s.Series, s.FY}] = append(bySY[sy{s.Series, s.FY}], s)
		nk := fmt.Sprintf("%d|%s", s.FY, s.Number)
		if o, dup := numbers[nk]; dup {
			bad("number %s (FY %d) stored twice: %s serial %d and %s serial %d", s.Number, s.FY, o.Series, o.Serial, s.Series, s.Serial)
		}
		numbers[nk] = s
		if _, known := keys[s.Key]; !known && !opt.AllowForeign {
			bad("invoice %s %s serial %d carries key %q that no request in the history used", s.Series, s.Number, s.Serial, s.Key)
		}
	}

	// (2) and (4): serials 1..N, issue times non-decreasing.
	sys := make([]sy, 0, len(bySY))
	for k := range bySY {
		sys = append(sys, k)
	}
	slices.SortFunc(sys, func(a, b sy) int { return cmp.Or(cmp.Compare(a.series, b.series), cmp.Compare(a.fy, b.fy)) })
	for _, k := range sys {
		rows := bySY[k]
		slices.SortFunc(rows, func(a, b Stored) int { return cmp.Compare(a.Serial, b.Serial) })
		for i, s := range rows {
			want := int64(i + 1)
			switch {
			case i > 0 && s.Serial == rows[i-1].Serial:
				bad("series %s FY %d: serial %d stored twice (duplicate)", k.series, k.fy, s.Serial)
			case s.Serial != want && (i == 0 || s.Serial != rows[i-1].Serial+1):
				prev := int64(0)
				if i > 0 {
					prev = rows[i-1].Serial
				}
				bad("series %s FY %d: gap: serial %d follows %d", k.series, k.fy, s.Serial, prev)
			}
			if i > 0 && s.IssuedAt.Before(rows[i-1].IssuedAt) {
				bad("series %s FY %d: issue time goes backwards: serial %d at %s after serial %d at %s",
					k.series, k.fy, s.Serial, s.IssuedAt.Format(time.RFC3339Nano), rows[i-1].Serial, rows[i-1].IssuedAt.Format(time.RFC3339Nano))
			}
		}
		if n := len(rows); n > 0 && rows[n-1].Serial != int64(n) {
			bad("series %s FY %d: %d invoices but the highest serial is %d", k.series, k.fy, n, rows[n-1].Serial)
		}
	}

	// (1) and (3), per key.
	for _, key := range order {
		ks := keys[key]
		got := byKey[key]
		if len(got) > 1 {
			var ns []string
			for _, s := range got {
				ns = append(ns, s.Number)
			}
			bad("key %q: %d invoices stored (%s), want at most one", key, len(got), strings.Join(ns, ", "))
		}
		if f := ks.refusal; f != nil && len(got) > 0 {
			bad("key %q: refused definitively (%d %s, entry %d), yet %s is stored", key, f.Status, clip(f.Err), f.Seq, got[0].Number)
		}
		if len(ks.acks) > 0 {
			r.KeysAcked++
			a := ks.acks[0]
			for _, b := range ks.acks[1:] {
				if b.Number != a.Number || b.Serial != a.Serial || b.Series != a.Series {
					bad("key %q: acknowledged as %s (serial %d) and later as %s (serial %d)", key, a.Number, a.Serial, b.Number, b.Serial)
				}
			}
			if len(got) == 0 {
				r.Lost = append(r.Lost, key)
				bad("key %q: acknowledged as %s %s (serial %d) but not stored: lost acknowledgement", key, a.Series, a.Number, a.Serial)
			} else if s := got[0]; s.Number != a.Number || s.Serial != a.Serial || !strings.EqualFold(s.Series, a.Series) {
				bad("key %q: acknowledged as %s %s serial %d, stored as %s %s serial %d", key, a.Series, a.Number, a.Serial, s.Series, s.Number, s.Serial)
			} else if !a.IssuedAt.IsZero() && !a.IssuedAt.Equal(s.IssuedAt) {
				bad("key %q: acknowledged with issue time %s, stored with %s", key, a.IssuedAt.Format(time.RFC3339Nano), s.IssuedAt.Format(time.RFC3339Nano))
			}
		} else {
			if opt.RequireAllAcked {
				bad("key %q: never acknowledged (%d attempts: %d failed, %d unknown)", key, ks.invokes, ks.fails, ks.unknowns)
			}
			if ks.unknowns == 0 && len(got) > 0 {
				bad("key %q: every attempt failed definitely, yet %s is stored", key, got[0].Number)
			}
		}
	}
	return r
}

// definitive reports whether a failed attempt tells the client that its
// request was not issued and never will be: every Fail but 409
// idempotency_key_in_progress (another attempt with the key is running).
func definitive(op Op) bool {
	if op.Type != Fail || op.Status != 409 {
		return op.Type == Fail
	}
	// Not final (docs/api.md): retry later, or a state that changes back.
	for _, code := range []string{"idempotency_key_in_progress", "period_locked", "series_leased"} {
		if strings.Contains(op.Err, code) {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
