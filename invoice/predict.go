package invoice

import (
	"context"
	"errors"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/series"
)

// rowState is what a predicting Committer knows of one counter row.
type rowState struct {
	// last is the state this Committer's last transaction on the row left
	// it in; known says whether there is one to predict from.
	last  series.State
	known bool
	// running counts this Committer's transactions on the row.
	running int
	// unstableUntil: a prediction on the row failed; not predicted before
	// then.
	unstableUntil time.Time
}

// idle reports whether r says nothing at now, so that its row may leave
// Committer.rows: the one delete rule of that map.
func (r *rowState) idle(now time.Time) bool {
	return !r.known && r.running == 0 && !now.Before(r.unstableUntil)
}

// predictable reports whether a transaction may predict the row at now: a
// remembered state, no other transaction of this Committer on it, no
// recent failed prediction.
func (r *rowState) predictable(now time.Time) bool {
	return r.known && r.running == 0 && !now.Before(r.unstableUntil)
}

// txBegan counts a transaction begun on the row.
func (r *rowState) txBegan() { r.running++ }

// txEnded counts one ended; more ends than begins is a bug.
func (r *rowState) txEnded() {
	if r.running <= 0 {
		panic("invoice: a transaction ended on a counter row more often than it began")
	}
	r.running--
}

// remember records st as the row's state unless an older one than the
// state remembered (two transactions that finished out of order).
func (r *rowState) remember(st series.State) {
	if r.known && (r.last.LastSerial > st.LastSerial || r.last.ChainLength > st.ChainLength) {
		return
	}
	r.last, r.known = st, true
}

// forget drops the remembered state and, with a non-zero until, makes the
// row unpredictable before then.
func (r *rowState) forget(until time.Time) {
	r.last, r.known = series.State{}, false
	if !until.IsZero() {
		r.unstableUntil = until
	}
}

// row returns the state of rk, adding it. c.mu must be held.
func (c *Committer) row(rk rowKey) *rowState {
	r := c.rows[rk]
	if r == nil {
		r = &rowState{}
		c.rows[rk] = r
	}
	return r
}

// tidy removes rk's state when it is idle at now. c.mu must be held.
func (c *Committer) tidy(rk rowKey, now time.Time) {
	if r := c.rows[rk]; r != nil && r.idle(now) {
		delete(c.rows, rk)
	}
}

// registerTx registers a transaction on the counter rows of parts (which
// the scheduler reserved for it) and returns them, with the states to
// predict them from when every row can be predicted (c predicts, each row
// predictable, no idempotency key twice in the batch), nil otherwise. It
// returns no rows (nothing to unregister) when c does not predict.
func (c *Committer) registerTx(parts [][]*call) ([]rowKey, []series.State) {
	if !c.st.predict {
		return nil, nil // nothing to track
	}
	rows := make([]rowKey, len(parts))
	for i, p := range parts {
		rows[i] = rowOf(p[0].req)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	predicted := make([]series.State, len(rows))
	now := time.Now()
	for i, rk := range rows {
		r := c.rows[rk]
		if r == nil || !r.predictable(now) {
			predicted = nil
			break
		}
		predicted[i] = r.last
	}
	if predicted != nil {
		seen := map[string]bool{}
		for _, p := range parts {
			for _, cl := range p {
				if k := cl.req.Draft.IdempotencyKey; k != "" {
					id := keyID(cl.req.Seller.ID, k)
					if seen[id] {
						predicted = nil
					}
					seen[id] = true
				}
			}
		}
	}
	for _, rk := range rows {
		c.row(rk).txBegan()
	}
	return rows, predicted
}

// unregisterTx ends what registerTx began.
func (c *Committer) unregisterTx(rows []rowKey) {
	if len(rows) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for _, rk := range rows {
		r := c.rows[rk]
		if r == nil {
			panic("invoice: a transaction unregistered from a counter row it did not register on")
		}
		r.txEnded()
		c.tidy(rk, now)
	}
}

// recordCommit records a committed transaction: in the stats, the n
// invoices it issued; when predicting, the state it left the counter row of
// each of parts in (states, parallel; nil: unknown, forget it).
// It takes c.mu once for the whole batch, which is on the critical path of
// the next one.
func (c *Committer) recordCommit(parts [][]*call, states []*series.State, n int, predicted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Batches++
	c.stats.Invoices += int64(n)
	if predicted {
		c.stats.Predicted++
	}
	if !c.st.predict {
		return
	}
	now := time.Now()
	for i, p := range parts {
		rk, st := rowOf(p[0].req), states[i]
		if st == nil {
			if r := c.rows[rk]; r != nil {
				r.forget(time.Time{})
				c.tidy(rk, now)
			}
			continue
		}
		c.row(rk).remember(*st)
	}
}

// forgetRows drops the remembered states of rows and, with a non-zero
// until, does not predict them before then. Rows whose unpredictable time
// is over leave the map meanwhile.
func (c *Committer) forgetRows(rows []rowKey, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for _, rk := range rows {
		c.row(rk).forget(until)
	}
	for rk := range c.rows {
		c.tidy(rk, now)
	}
}

// commitPredicted issues parts from the predicted states of their counter
// rows (see strategy.predict) in one round trip (delegated, one call,
// after one more to take event ids when a seller subscribes) and answers
// every member.
// done is false when the prediction failed and nothing was taken: the
// caller issues parts the ordinary way. Otherwise err is the
// transaction's failure, nil when it committed.
func (c *Committer) commitPredicted(ctx context.Context, parts [][]*call, rows []rowKey, predicted []series.State, opt series.Options) (done bool, err error) {
	now := c.now()
	groups, claims := predictedGroups(parts)
	window, ok := c.predictedWindow(parts, claims, now)
	if !ok {
		return false, nil
	}
	invs, states, err := c.sendPredicted(ctx, groups, predicted, claims, window, now, opt)
	if err != nil {
		return c.predictionFailed(groups, rows, err)
	}
	// Stats first: an answered caller may read them at once.
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	c.recordCommit(parts, states, n, true)
	for g, p := range parts {
		for i, cl := range p {
			cl.answer(Result{Invoice: invs[g][i]})
		}
	}
	return true, nil
}

// predictedGroups returns the group of each of parts and the claims of
// their idempotency keys (no key is twice in a predicted batch).
func predictedGroups(parts [][]*call) ([]Group, []KeyClaim) {
	groups := make([]Group, len(parts))
	var claims []KeyClaim
	for g, p := range parts {
		groups[g] = Group{Seller: p[0].req.Seller, Series: p[0].req.Series, Drafts: make([]document.Draft, len(p))}
		for i, cl := range p {
			d := cl.req.Draft
			groups[g].Drafts[i] = d
			if d.IdempotencyKey != "" {
				claims = append(claims, KeyClaim{SellerID: cl.req.Seller.ID, Key: d.IdempotencyKey, RequestHash: d.RequestHash})
			}
		}
	}
	return groups, claims
}

// predictedWindow returns the dates of parts for the database to judge
// against the date window, by its clock after the keys' locks
// (DatabaseClock, with keys), or nil when there is no window or c judged
// it at now. ok is false when a member's date is out of the window at
// now: only the ordinary path refuses, after the key's replay and
// progress are known.
func (c *Committer) predictedWindow(parts [][]*call, claims []KeyClaim, now time.Time) (window *dateWindow, ok bool) {
	switch {
	case c.cfg.DateWindow == nil:
		return nil, true
	case c.cfg.DateClock == DatabaseClock && len(claims) > 0:
		// When it fails, the ordinary path words the refusal.
		for _, p := range parts {
			for _, cl := range p {
				d := cl.req.Draft.InvoiceDate
				if window == nil {
					window = &dateWindow{First: d, Last: d, BackdateDays: c.cfg.DateWindow.BackdateDays}
				}
				window.First, window.Last = minTime(window.First, d), maxTime(window.Last, d)
			}
		}
		return window, true
	}
	for _, p := range parts {
		for _, cl := range p {
			if c.cfg.DateWindow.Check(cl.req.Draft.InvoiceDate, now) != nil {
				return nil, false
			}
		}
	}
	return nil, true
}

// sendPredicted issues groups from their predicted states: as one call
// (strategy.delegated) or one pipelined round trip ending in COMMIT
// (issuePredicted). It returns what they return.
func (c *Committer) sendPredicted(ctx context.Context, groups []Group, predicted []series.State, claims []KeyClaim,
	window *dateWindow, now time.Time, opt series.Options) ([][]document.Invoice, []*series.State, error) {
	if c.st.delegated {
		return c.issueDelegated(ctx, groups, predicted, claims, window, now, opt)
	}
	tx, end, err := c.begin(ctx)
	if err != nil {
		return nil, nil, translate(err, "begin")
	}
	defer end()
	return issuePredicted(ctx, tx, groups, predicted, claims, window, now, opt)
}

// predictionFailed answers a predicted transaction of groups on rows that
// failed with err: done is false when nothing was taken and the ordinary
// path is to issue the batch (it answers what failed as it would have
// without prediction); otherwise err is the transaction's failure.
func (c *Committer) predictionFailed(groups []Group, rows []rowKey, err error) (done bool, _ error) {
	switch {
	case errors.Is(err, errNeedsEventIDs):
		// A seller subscribes: the ordinary path issues this batch, and
		// the next delegated one takes event ids for the sellers first.
		for _, g := range groups {
			c.subscribers.Store(g.Seller.ID, true)
		}
		return false, nil
	case errors.Is(err, errPredictRefused):
		return false, nil // only the ordinary path words the refusal
	case series.IsLeased(err):
		// The series is leased to a device (docs/offline.md): the
		// prediction was right, the guard refused the write. Nothing was
		// taken; the rows are not predicted while the lease holds, and
		// the ordinary path answers 409 series_leased. No warning: it is
		// not a failure of the prediction.
		c.forgetRows(rows, time.Now().Add(unstableFor))
		return false, nil
	case mispredicted(err), statementFailed(err):
		// A key already used or held leaves the rows as remembered; a
		// row that moved, or any other failed statement (a schema
		// without the prediction's functions, a deadlock, a constraint),
		// is forgotten and not predicted for a while.
		c.mu.Lock()
		c.stats.Mispredicted++
		c.mu.Unlock()
		c.observeMispredicted()
		if moved := series.IsMoved(err); moved || !mispredicted(err) {
			c.forgetRows(rows, time.Now().Add(unstableFor))
			if !moved && c.cfg.Logger != nil {
				c.cfg.Logger.Warn("group commit: predicted transaction failed, issuing it the ordinary way", "err", err)
			}
		}
		return false, nil
	}
	c.forgetRows(rows, time.Time{})
	return true, err
}
