package api

import (
	"context"
	"sync"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
)

// The expensive-read budget (GuardBudget) is slots, per seller and in all,
// of two kinds. Exports, console downloads and verifies hold an export
// slot for as long as they run (their spool and its sending, or the
// verify). Lists (invoices of a series, events) hold a list slot while
// they read and render their page, and give it back before the page is
// sent: a slow reader then holds the page's bytes (budget.go), never a
// slot or a database connection.

// Defaults of the list slots in Config.
const (
	DefaultMaxListReads          = 8
	DefaultMaxListReadsPerSeller = 4
	// listSlotWait is how long a list waits for a slot before its 429:
	// a page is read in milliseconds, so a burst of them queues instead
	// of failing.
	listSlotWait = 2 * time.Second
)

var errTooManyReads = apperr.New(apperr.TooMany, "too_many_reads", "too many list reads are in progress; retry in a moment")

// readSlots counts the reads in progress of one kind, in total and per
// seller.
type readSlots struct {
	mu        sync.Mutex
	total     int
	perSeller map[int64]int
	max       int
	maxSeller int
	// wait is how long acquire waits for a slot (0: not at all), freed
	// closes and replaces changed when a slot is given back.
	wait  time.Duration
	freed chan struct{}
	// full and sellerFull word the refusal when all the slots, or the
	// seller's, are taken (held of them).
	full, sellerFull func(held int) error
}

func newExportSlots(max, maxPerSeller int) *readSlots {
	if max <= 0 {
		max = DefaultMaxExports
	}
	if maxPerSeller <= 0 {
		maxPerSeller = DefaultMaxExportsPerSeller
	}
	return &readSlots{perSeller: map[int64]int{}, max: max, maxSeller: min(maxPerSeller, max), freed: make(chan struct{}),
		full: func(held int) error {
			return apperr.Errorf(errTooManyExports, "%d audit exports are in progress, the most this server runs at once; retry in a few seconds", held)
		},
		sellerFull: func(held int) error {
			return apperr.Errorf(errTooManyExports, "this seller already has %d audit exports in progress, the most allowed; retry when one has finished", held)
		}}
}

func newListSlots(max, maxPerSeller int) *readSlots {
	if max <= 0 {
		max = DefaultMaxListReads
	}
	if maxPerSeller <= 0 {
		maxPerSeller = DefaultMaxListReadsPerSeller
	}
	return &readSlots{perSeller: map[int64]int{}, max: max, maxSeller: min(maxPerSeller, max), wait: listSlotWait, freed: make(chan struct{}),
		full: func(held int) error {
			return apperr.Errorf(errTooManyReads, "%d list reads are in progress, the most this server runs at once (serve --max-list-reads); retry in a moment", held)
		},
		sellerFull: func(held int) error {
			return apperr.Errorf(errTooManyReads, "this seller already has %d list reads in progress, the most allowed (serve --max-list-reads-per-seller); retry in a moment", held)
		}}
}

// acquire takes a slot for seller, waiting up to the slots' wait (and no
// longer than ctx) for one to be free, and returns the function that gives
// it back (once; later calls do nothing). It fails with the slots' refusal
// (429) when the global or the seller's limit is still reached.
func (e *readSlots) acquire(ctx context.Context, seller int64) (release func(), err error) {
	deadline := time.Now().Add(e.wait)
	for {
		e.mu.Lock()
		var refusal error
		switch {
		case e.total >= e.max:
			refusal = e.full(e.total)
		case e.perSeller[seller] >= e.maxSeller:
			refusal = e.sellerFull(e.perSeller[seller])
		default:
			e.total++
			e.perSeller[seller]++
			e.mu.Unlock()
			return e.releaser(seller), nil
		}
		freed := e.freed
		e.mu.Unlock()
		left := time.Until(deadline)
		if left <= 0 {
			return nil, refusal
		}
		t := time.NewTimer(left)
		select {
		case <-freed:
			t.Stop()
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, refusal
		}
	}
}

// releaser returns the function that gives seller's slot back once.
func (e *readSlots) releaser(seller int64) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			if e.total <= 0 || e.perSeller[seller] <= 0 {
				panic("api: read slot released twice")
			}
			e.total--
			if e.perSeller[seller]--; e.perSeller[seller] == 0 {
				delete(e.perSeller, seller)
			}
			close(e.freed)
			e.freed = make(chan struct{})
		})
	}
}
