package api

import (
	"context"
	"fmt"
	"sync"

	"github.com/invoiced/invoiced/internal/apperr"
)

// The server's memory follows the bytes it is sent and the answers it
// builds, never what a client claims or how much a seller has stored.
// Request bodies are read into buffers that grow as bytes arrive (a
// Content-Length is a claim: 200 connections claiming 8 MiB each and
// sending one byte took 1.6 GiB when buffers were sized by it); list
// answers are pages bounded by bytes as well as by count. Every buffer a
// request grows, and every answer it holds while it is sent, is taken from
// one budget of in-flight bytes for the whole server (serve
// --max-inflight-bytes), of which one seller may hold a quarter: past
// either, the request gets 503 server_busy with Retry-After before the
// buffer grows. The budget is given back when the request ends.

// DefaultMaxInflightBytes is the budget when Config.MaxInflightBytes is 0.
const DefaultMaxInflightBytes = 256 << 20

// errServerBusy answers a request whose next buffer the budget cannot hold.
var errServerBusy = apperr.New(apperr.Unavailable, "server_busy", "the server holds as many request and answer bytes as it may; retry in a moment")

// byteBudget counts the bytes requests hold, in all and per seller.
type byteBudget struct {
	max, perSeller int64
	mu             sync.Mutex
	held           int64
	bySeller       map[int64]int64
}

// newByteBudget returns a budget of max bytes (DefaultMaxInflightBytes
// when 0), of which a seller may hold a quarter, but never less than two
// batch bodies.
func newByteBudget(total int64) *byteBudget {
	if total <= 0 {
		total = DefaultMaxInflightBytes
	}
	return &byteBudget{max: total, perSeller: min(total, max(total/4, 2*batchBodyMax)), bySeller: map[int64]int64{}}
}

// take takes n bytes for seller (0: not yet known) and returns nil, or
// errServerBusy (taking nothing) when the server or the seller would hold
// more than allowed.
func (b *byteBudget) take(seller, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+n > b.max {
		return apperr.Errorf(errServerBusy, "the server holds %d MiB of request and answer bytes, the most it may (serve --max-inflight-bytes); retry in a moment", b.held>>20)
	}
	if seller != 0 && b.bySeller[seller]+n > b.perSeller {
		return apperr.Errorf(errServerBusy, "this seller's requests hold %d MiB of request and answer bytes, the most one seller may; retry when some have finished", b.bySeller[seller]>>20)
	}
	b.add(seller, n)
	return nil
}

// hold takes n bytes for seller whatever is held already, for an answer
// whose work is done (an invoice issued must be answered); they still
// count against the requests that follow.
func (b *byteBudget) hold(seller, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.add(seller, n)
}

// add counts n more bytes held by seller. The caller holds mu.
func (b *byteBudget) add(seller, n int64) {
	b.held += n
	if seller != 0 {
		b.bySeller[seller] += n
	}
}

// give gives back n bytes that seller took.
func (b *byteBudget) give(seller, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n < 0 || b.held < n || (seller != 0 && b.bySeller[seller] < n) {
		panic(fmt.Sprintf("api: byte budget: giving back %d bytes of seller %d, more than held", n, seller))
	}
	b.held -= n
	if seller != 0 {
		if b.bySeller[seller] -= n; b.bySeller[seller] == 0 {
			delete(b.bySeller, seller)
		}
	}
}

// Held returns the bytes held by requests in progress.
func (b *byteBudget) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// ledger is what one request holds of the budget; base gives it all back
// when the request ends.
type ledger struct {
	budget *byteBudget
	mu     sync.Mutex // a handler's goroutines may grow buffers at once
	seller int64      // set by authentication; 0 before
	// held is per seller, as taken: a request's seller is set once, after
	// any bytes it took before authentication.
	held map[int64]int64
}

type ledgerKey struct{}

// withLedger returns ctx with a fresh ledger on b, and the function that
// gives back everything the request took.
func withLedger(ctx context.Context, b *byteBudget) (context.Context, func()) {
	l := &ledger{budget: b, held: map[int64]int64{}}
	return context.WithValue(ctx, ledgerKey{}, l), l.close
}

// ledgerOf returns ctx's ledger; nil outside a request of the API (the
// console's, tests calling handlers directly), which then takes nothing.
func ledgerOf(ctx context.Context) *ledger {
	l, _ := ctx.Value(ledgerKey{}).(*ledger)
	return l
}

// take takes n more bytes for the request, failing as the budget's take
// does; a nil ledger takes nothing.
func (l *ledger) take(n int64) error {
	if l == nil || n <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.budget.take(l.seller, n); err != nil {
		return err
	}
	l.held[l.seller] += n
	return nil
}

// hold takes n more bytes for the request whatever is held (the budget's
// hold); a nil ledger takes nothing.
func (l *ledger) hold(n int64) {
	if l == nil || n <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.budget.hold(l.seller, n)
	l.held[l.seller] += n
}

// setSeller names the request's seller; what it takes from now on counts
// against the seller's share.
func (l *ledger) setSeller(id int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seller = id
}

// close gives back everything the request took.
func (l *ledger) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for seller, n := range l.held {
		l.budget.give(seller, n)
	}
	clear(l.held)
}
