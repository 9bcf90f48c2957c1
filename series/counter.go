package series

import (
	"time"

	"github.com/invoiced/invoiced/gst"
)

// This file holds the counter's values: the blocks of numbers taken, the
// options of a take, and the state a counter row is predicted to be in.

// Block is a run of consecutive numbers taken in one step: serials First to
// First+N-1 of one series-year, all issued at IssuedAt.
type Block struct {
	Series   gst.Series
	FY       gst.FY
	First    int64
	N        int
	IssuedAt time.Time
	// ChainLength and ChainHead are the counter row's tamper-evident chain
	// state before this block: records appended for the block continue it.
	ChainLength int64
	ChainHead   []byte
}

// Serial returns the i-th serial of the block (0-based).
func (b Block) Serial(i int) int64 { return b.First + int64(i) }

// Number returns the rendered i-th number of the block (0-based).
func (b Block) Number(i int) string {
	n, _ := b.Series.Format.Render(b.FY, b.Serial(i))
	return n
}

// Options tune an allocation.
type Options struct {
	// LockTimeout bounds the wait for the counter row's lock; 0 waits as long
	// as the transaction's own lock_timeout allows.
	LockTimeout time.Duration
	// LockWaited, when set, is told how long each round trip that locks
	// counter rows took (NextMany's: the lock wait plus one round trip),
	// also when it gave up at LockTimeout. For metrics; it must return at
	// once.
	LockWaited func(time.Duration)
	// Routed writes rows as multi-row VALUES rather than from unnest of
	// array parameters, for a Citus coordinator (docs/scale-out.md): Citus
	// routes an INSERT … VALUES whose rows belong to one seller to that
	// seller's worker and commits it there in one phase, while it runs an
	// INSERT … SELECT from a function through the coordinator, copying the
	// rows, which it always commits in two phases. The statement's text
	// then depends on the number of rows, so it costs a plan per batch
	// size; plain PostgreSQL keeps the array form.
	Routed bool
}

// Take asks for N consecutive numbers of Series for invoices dated Date.
type Take struct {
	Series gst.Series
	Date   time.Time
	N      int
}

// State is a counter row as a transaction left it: the last serial taken,
// its invoice date and issue time, and the chain after the last record. A
// process that remembers the state it committed can predict the next block
// without reading the row first (Predict, QueueAdvance).
type State struct {
	LastSerial   int64
	LastDate     time.Time
	LastIssuedAt time.Time
	ChainLength  int64
	ChainHead    []byte
}

// After returns the state of the counter row once block b (dated date) and
// its records are committed: appended records and head as given.
func (b Block) After(date time.Time, chainLength int64, chainHead []byte) State {
	return State{LastSerial: b.First + int64(b.N) - 1, LastDate: date, LastIssuedAt: b.IssuedAt,
		ChainLength: chainLength, ChainHead: chainHead}
}

// Predict returns the block NextMany would take for t, stamped now, if the
// counter row were in state st. ok is false when NextMany would refuse it
// (date invalid or out of order, numbers exhausted): only NextMany gives the
// refusal its error.
func Predict(t Take, st State, now time.Time) (Block, bool) {
	fy := gst.FYOf(t.Date)
	if !fy.Valid() || t.N < 1 || t.Date.Before(st.LastDate) || st.LastSerial+int64(t.N) > t.Series.Format.Capacity() {
		return Block{}, false
	}
	at := now.Truncate(time.Microsecond)
	if at.Before(st.LastIssuedAt) {
		at = st.LastIssuedAt // the clock went back: issue times never do
	}
	return Block{Series: t.Series, FY: fy, First: st.LastSerial + 1, N: t.N, IssuedAt: at,
		ChainLength: st.ChainLength, ChainHead: st.ChainHead}, true
}

// Advance moves one counter row from the state a block was predicted from
// (Predict) to the state after it: After is Block.After(the block's
// invoice date, the chain after the block's records).
type Advance struct {
	Block Block
	After State
}
