package invoice

import (
	"context"
	"time"
)

// batchUnit marks the calls of one IssueBatch: a queue is never cut
// between two calls of one unit, so a batch's calls of one invoice date
// are numbered in one transaction, consecutively, in request order.
type batchUnit struct{}

// IssueBatch issues reqs, all of one seller and series, and returns one
// Result per request, in order, each as Issue would answer it alone
// (replay, key in progress, key reused, date window, exhausted, the
// outcome unknown). With batching on, the requests of one invoice date
// join their queue together and are taken by one transaction: they get
// consecutive serials in the order of reqs, under one hold of the counter
// row, unless that transaction fails and its members are retried one by
// one (in the same order). Requests of several dates are numbered date by
// date, oldest first (a series numbers its dates in order). With batching
// off, each request runs in a transaction of its own, in order.
//
// If ctx ends, requests still queued leave their queue and get ctx.Err();
// those a transaction took get ErrOutcomeUnknown (see Issue).
func (c *Committer) IssueBatch(ctx context.Context, reqs []IssueRequest) []Result {
	out := make([]Result, len(reqs))
	if !c.Batching {
		for i, r := range reqs {
			if err := ctx.Err(); err != nil {
				out[i] = Result{Err: err}
				continue
			}
			out[i] = c.single(ctx, r)
		}
		return out
	}
	unit := &batchUnit{}
	calls := make([]*call, len(reqs))
	keys := make([]groupKey, len(reqs))
	c.mu.Lock()
	if c.groups == nil {
		c.groups = map[groupKey]*group{}
	}
	rows := map[rowKey]bool{}
	for i, r := range reqs {
		k := groupKey{r.Series.ID, r.Draft.InvoiceDate}
		cl := &call{req: r, done: make(chan struct{}), unit: unit}
		g := c.groups[k]
		if g == nil {
			g = &group{}
			c.groups[k] = g
		}
		g.pending = append(g.pending, cl)
		calls[i], keys[i] = cl, k
		rows[k.row()] = true
	}
	now := time.Now()
	for rk := range rows {
		switch {
		case c.solo[rk]:
		case now.Before(c.soloUntil[rk]):
			c.startSolo(rk)
		case c.shared < c.inFlight():
			c.shared++
			go c.drainShared()
		}
	}
	c.mu.Unlock()
	for i, cl := range calls {
		select {
		case <-cl.done:
			out[i] = cl.res
		case <-ctx.Done():
			out[i] = c.abandon(ctx, keys[i], cl)
		}
	}
	return out
}

// cutAt returns how many calls of pending a transaction takes when it may
// take n: n, or more to keep the calls of one IssueBatch together (a unit
// holds at most what one request may send, so a transaction exceeds
// MaxBatch by less than that).
func cutAt(pending []*call, n int) int {
	for n > 0 && n < len(pending) && pending[n].unit != nil && pending[n].unit == pending[n-1].unit {
		n++
	}
	return n
}
