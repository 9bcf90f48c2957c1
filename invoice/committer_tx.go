package invoice

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/series"
)

// keyID names an idempotency key of a seller in in-memory sets.
func keyID(sellerID int64, key string) string { return strconv.FormatInt(sellerID, 10) + "\x00" + key }

// member is one request in a transaction of commitTx and what the
// transaction has learnt of it: its idempotency key's claim, and whether
// it is settled before the writes (answered, or a replay to answer once
// the transaction commits).
type member struct {
	cl       *call
	claim    int   // index in txMembers.claims; -1: no idempotency key
	replayID int64 // the invoice the key replays; 0: none
	replay   *document.Invoice
	settled  bool
}

// txMembers is the one state of a transaction of commitTx: its members
// by part (each part one series and date, in arrival order) and the
// distinct idempotency keys they claim.
type txMembers struct {
	parts  [][]member
	claims []KeyClaim
}

// membersOf returns the state of a transaction for parts: each distinct
// (seller, key, request) is claimed once.
func membersOf(parts [][]*call) *txMembers {
	t := &txMembers{parts: make([][]member, len(parts))}
	claimOf := map[string]int{}
	for p, part := range parts {
		t.parts[p] = make([]member, len(part))
		for i, cl := range part {
			m := member{cl: cl, claim: -1}
			if d := cl.req.Draft; d.IdempotencyKey != "" {
				id := keyID(cl.req.Seller.ID, d.IdempotencyKey) + "\x00" + string(d.RequestHash)
				j, ok := claimOf[id]
				if !ok {
					j = len(t.claims)
					claimOf[id] = j
					t.claims = append(t.claims, KeyClaim{SellerID: cl.req.Seller.ID, Key: d.IdempotencyKey, RequestHash: d.RequestHash})
				}
				m.claim = j
			}
			t.parts[p][i] = m
		}
	}
	return t
}

// each calls f for every member, part by part, in arrival order.
func (t *txMembers) each(f func(m *member)) {
	for p := range t.parts {
		for i := range t.parts[p] {
			f(&t.parts[p][i])
		}
	}
}

// settle answers m with r before the writes: m is not issued.
func (m *member) settle(r Result) {
	m.cl.answer(r)
	m.settled = true
}

// commitTx runs one transaction for parts, each the members of one series
// and date (no two of one series and year), and answers the members it
// settles: those whose idempotency key replays, is in progress or was
// reused; a part refused on its own (date order, exhausted, date window)
// with its error; and, when it commits, the rest with their invoices. It
// returns the transaction's error, nil when it committed; on an error the
// members not yet answered are the caller's (attempt).
func (c *Committer) commitTx(ctx context.Context, parts [][]*call, opt series.Options) (err error) {
	var calls []*call
	for _, p := range parts {
		calls = append(calls, p...)
	}
	defer c.observeTx(time.Now(), calls, &err)

	rows, predicted := c.registerTx(parts)
	defer c.unregisterTx(rows)
	if predicted != nil {
		if done, err := c.commitPredicted(ctx, parts, rows, predicted, opt); done {
			return err
		}
	}

	tx, end, err := c.begin(ctx)
	if err != nil {
		return translate(err, "begin")
	}
	defer end()
	t := membersOf(parts)
	judgedAt, err := c.claimKeys(ctx, tx, t)
	if err != nil {
		return err
	}
	c.judgeDates(t, judgedAt)
	if err := t.readReplays(ctx, tx); err != nil {
		return err
	}
	groups, members := t.toIssue()
	invs, groupErrs, states, err := issueMany(ctx, tx, groups, c.now(), opt, whatIsLeft, commitAtEnd)
	if err != nil {
		return err
	}
	c.answerCommitted(t, members, invs, groupErrs, states)
	return nil
}

// claimKeys claims t's idempotency keys in tx, before the counter locks,
// and settles the members whose key was reused or replays, and every
// member after the first with a fresh key (the key is in progress). It
// returns the time the date window is judged by: the database's clock
// after the keys' locks (DatabaseClock, with keys), zero otherwise.
func (c *Committer) claimKeys(ctx context.Context, tx pgx.Tx, t *txMembers) (time.Time, error) {
	if len(t.claims) == 0 {
		return time.Time{}, nil
	}
	outcomes, dbNow, err := claimKeys(ctx, tx, t.claims)
	if err != nil {
		return time.Time{}, err
	}
	issuing := map[string]bool{}
	t.each(func(m *member) {
		if m.claim < 0 {
			return
		}
		o, cl := outcomes[m.claim], t.claims[m.claim]
		key := keyID(cl.SellerID, cl.Key)
		switch {
		case o.Err != nil:
			m.settle(Result{Err: o.Err})
		case o.InvoiceID != 0:
			m.replayID, m.settled = o.InvoiceID, true
		case issuing[key]:
			m.settle(Result{Err: ErrKeyInProgress})
		default:
			issuing[key] = true
		}
	})
	if c.cfg.DateClock != DatabaseClock {
		return time.Time{}, nil
	}
	return dbNow, nil
}

// judgeDates settles, with the date window's refusal, the members not yet
// settled whose date fell out of it at judgedAt (Now when zero). It runs
// once the keys are held: nothing else with a member's key can commit
// meanwhile.
func (c *Committer) judgeDates(t *txMembers, judgedAt time.Time) {
	if c.cfg.DateWindow == nil {
		return
	}
	now := judgedAt
	if now.IsZero() {
		now = c.now()
	}
	t.each(func(m *member) {
		if m.settled {
			return
		}
		if err := c.cfg.DateWindow.Check(m.cl.req.Draft.InvoiceDate, now); err != nil {
			m.settle(Result{Err: err})
		}
	})
}

// readReplays reads, before the counter locks, the committed invoices the
// replaying members' keys name.
func (t *txMembers) readReplays(ctx context.Context, tx pgx.Tx) error {
	var err error
	t.each(func(m *member) {
		if err == nil && m.replayID != 0 {
			var inv document.Invoice
			inv, err = Get(ctx, tx, m.cl.req.Seller.ID, m.replayID)
			m.replay = &inv
		}
	})
	return err
}

// toIssue returns the groups to issue, one per part with members not
// settled, and those members, in arrival order.
func (t *txMembers) toIssue() ([]Group, [][]*call) {
	var groups []Group
	var members [][]*call
	for _, p := range t.parts {
		var ms []*call
		var drafts []document.Draft
		for i := range p {
			if !p[i].settled {
				ms = append(ms, p[i].cl)
				drafts = append(drafts, p[i].cl.req.Draft)
			}
		}
		if len(ms) > 0 {
			groups = append(groups, Group{Seller: p[0].cl.req.Seller, Series: p[0].cl.req.Series, Drafts: drafts})
			members = append(members, ms)
		}
	}
	return groups, members
}

// answerCommitted records a committed transaction and answers the members
// it issued (invs, by group), the rest of a group issued in part with the
// group's error (the series had fewer numbers left than members), and the
// replays. Stats first: an answered caller may read them at once.
func (c *Committer) answerCommitted(t *txMembers, members [][]*call, invs [][]document.Invoice, groupErrs []error, states []*series.State) {
	issued := 0
	for g := range members {
		issued += len(invs[g])
	}
	c.recordCommit(members, states, issued, false)
	for g, ms := range members {
		for i, cl := range ms {
			if i >= len(invs[g]) {
				cl.answer(Result{Err: groupErrs[g]})
				continue
			}
			cl.answer(Result{Invoice: invs[g][i]})
		}
	}
	t.each(func(m *member) {
		if m.replayID != 0 {
			m.cl.answer(Result{Invoice: *m.replay, Replayed: true})
		}
	})
}

// begin starts a transaction: a pipeTx on a pool connection when c's
// transactions are pipelined (BEGIN and COMMIT then ride along with other
// statements), the database's own otherwise. end rolls back whatever was
// not committed, waiting at most 5 s (members of a failed batch are
// answered after it), and returns the connection. It fails when no
// connection or transaction can be had.
func (c *Committer) begin(ctx context.Context) (tx pgx.Tx, end func(), err error) {
	release := func() {}
	if c.st.pipelined {
		conn, err := c.pool.Acquire(ctx)
		if err != nil {
			return nil, nil, err
		}
		tx, release = &pipeTx{conn: conn, plans: c.st.plans}, conn.Release
	} else if tx, err = c.db.Begin(ctx); err != nil {
		return nil, nil, err
	}
	return tx, func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tx.Rollback(rctx) // after COMMIT, ErrTxClosed: nothing to undo
		release()
	}, nil
}
