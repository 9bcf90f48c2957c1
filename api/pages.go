package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
)

// Lists (GET /v1/series/{code}/invoices, GET /v1/events) answer a page at
// a time, bounded by bytes as well as by count: a page stops at the limit
// asked for or at listPageBytes of items, whichever comes first (it always
// holds one item, however large), and says where to go on. Its items are
// read as they arrive from the database, each rendered into the page as it
// comes, in chunks sized by what the page can still hold (pageReader), so
// neither the rows nor the page are ever held whole beyond the bound; the
// page's buffer is taken from the byte budget as it grows (budget.go). A
// page of 1,000 invoices of 250 lines was one 115 MB answer built in
// memory (700 MiB of heap): now it is 4 MiB, and next_cursor goes on.

// listPageBytes is the most bytes of items one list answer holds.
const listPageBytes = 4 << 20

// firstChunk is how many rows a page reads first, before it knows how
// large its items are.
const firstChunk = 64

// errPageFull stops reading rows when the page holds what it may.
var errPageFull = errors.New("api: the page is full")

// jsonPage is a list answer being built: head, then the items' JSON
// separated by commas.
type jsonPage struct {
	ledger   *ledger
	buf      []byte
	items    int
	limit    int // the most items
	maxBytes int // the most bytes of items (one item is always let in)
	start    int // where the items begin in buf
	more     bool
}

// newJSONPage starts a page of at most limit items, after head (`{"x":[`),
// whose buffer is taken from ctx's ledger as it grows.
func newJSONPage(ctx context.Context, head string, limit int) *jsonPage {
	return &jsonPage{ledger: ledgerOf(ctx), buf: []byte(head), limit: limit, maxBytes: listPageBytes, start: len(head)}
}

// add appends v's JSON as the page's next item. It returns errPageFull,
// adding nothing and noting that the list goes on, when the page holds its
// limit or v would take its items past maxBytes; errServerBusy when the
// byte budget cannot hold the page's growth; or the error of encoding v.
func (p *jsonPage) add(v any) error {
	if p.items == p.limit {
		p.more = true
		return errPageFull
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if p.items > 0 && len(p.buf)-p.start+1+len(b) > p.maxBytes {
		p.more = true
		return errPageFull
	}
	need := len(p.buf) + 1 + len(b)
	if need > cap(p.buf) {
		grown := max(2*cap(p.buf), need)
		if p.items > 0 { // no room beyond the bound and a closing tail
			grown = min(grown, max(need, p.start+p.maxBytes+256))
		}
		if err := p.ledger.take(int64(grown - cap(p.buf))); err != nil {
			return err
		}
		p.buf = append(make([]byte, 0, grown), p.buf...)
	}
	if p.items > 0 {
		p.buf = append(p.buf, ',')
	}
	p.buf = append(p.buf, b...)
	p.items++
	return nil
}

// chunk returns how many rows to read next: what the page may still hold
// by count, and one more to learn whether the list goes on; once items
// have come, no more than their average size says will fit.
func (p *jsonPage) chunk() int {
	n := p.limit - p.items + 1
	if p.items == 0 {
		return min(n, firstChunk)
	}
	avg := max(1, (len(p.buf)-p.start)/p.items)
	return max(1, min(n, (p.maxBytes-(len(p.buf)-p.start))/avg+1))
}

// finish closes the items with tail (`],"next":…}`) and returns the page.
func (p *jsonPage) finish(tail string) []byte {
	if len(p.buf)+len(tail) > cap(p.buf) {
		p.ledger.hold(int64(len(tail)))
	}
	return append(p.buf, tail...)
}

// readPage fills page by asking read for chunks of rows, page.chunk of
// them at a time, until a chunk comes back short (the list has ended) or
// the page is full. read adds each row it reads to the page and returns
// how many it read. readPage returns read's first error other than the
// page being full.
func readPage(page *jsonPage, read func(n int) (got int, err error)) error {
	for {
		n := page.chunk()
		got, err := read(n)
		if errors.Is(err, errPageFull) {
			return nil
		}
		if err != nil || got < n {
			return err
		}
	}
}

// sendPage gives back the request's list slot (GuardBudget), then writes
// body, a page, as a 200: a slow reader holds the page's bytes, not a
// slot.
func (s *Server) sendPage(c echo.Context, body []byte) error {
	if release, ok := c.Request().Context().Value(releaseKey{}).(func()); ok {
		release()
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
}
