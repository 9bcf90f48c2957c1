package invoice

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/series"
)

// reservation says whether the scheduler reserved a transaction's counter
// rows for it.
type reservation int

const (
	// unreserved: Batching off, the transaction runs in its caller's
	// goroutine, and others of this Committer may hold the same rows.
	unreserved reservation = iota
	// reserved: a batch's transaction, or a retry of its members; no other
	// transaction of this Committer holds the rows, so they may be
	// predicted.
	reserved
)

// keyID names an idempotency key of a seller in in-memory sets.
func keyID(sellerID int64, key string) string { return strconv.FormatInt(sellerID, 10) + "\x00" + key }

// commitTx runs one transaction for parts, each the members of one series
// and date (no two of one series and year), and answers the members it
// settles: those whose idempotency key replays, is in progress or was
// reused; a part refused on its own (date order, exhausted, date window)
// with its error; and, when it commits, the rest with their invoices. It
// returns the transaction's error, nil when it committed; on an error the
// members not yet answered are the caller's (attempt).
func (c *Committer) commitTx(ctx context.Context, parts [][]*call, opt series.Options, res reservation) (err error) {
	var calls []*call
	for _, p := range parts {
		calls = append(calls, p...)
	}
	defer c.observeTx(time.Now(), calls, &err)

	rows, predicted := c.registerTx(parts, res)
	defer c.unregisterTx(rows)
	if predicted != nil {
		if done, err := c.commitPredicted(ctx, parts, rows, predicted, opt); done {
			return err
		}
	}

	tx, pipe, end, err := c.begin(ctx)
	if err != nil {
		return translate(err, "begin")
	}
	defer end()

	// Idempotency keys, before the counter locks. Each distinct (seller,
	// key, request) is claimed once. Only the first member with a fresh
	// key is issued; later members with that key are told it is in
	// progress.
	var claims []KeyClaim
	claimOf := map[string]int{}
	memberClaim := map[*call]int{}
	for _, cl := range calls {
		d := cl.req.Draft
		if d.IdempotencyKey == "" {
			continue
		}
		id := keyID(cl.req.Seller.ID, d.IdempotencyKey) + "\x00" + string(d.RequestHash)
		j, ok := claimOf[id]
		if !ok {
			j = len(claims)
			claimOf[id] = j
			claims = append(claims, KeyClaim{SellerID: cl.req.Seller.ID, Key: d.IdempotencyKey, RequestHash: d.RequestHash})
		}
		memberClaim[cl] = j
	}
	replays := map[*call]int64{}
	skip := map[*call]bool{}
	judgedAt := time.Time{} // when the date window is judged: now, unless the database's clock
	if len(claims) > 0 {
		outcomes, dbNow, err := claimKeys(ctx, tx, claims)
		if err != nil {
			return err
		}
		if c.cfg.DateClock == DatabaseClock {
			judgedAt = dbNow
		}
		issuing := map[string]bool{}
		for _, cl := range calls {
			j, ok := memberClaim[cl]
			if !ok {
				continue
			}
			o := outcomes[j]
			key := keyID(claims[j].SellerID, claims[j].Key)
			switch {
			case o.Err != nil:
				cl.answer(Result{Err: o.Err})
				skip[cl] = true
			case o.InvoiceID != 0:
				replays[cl] = o.InvoiceID
				skip[cl] = true
			case issuing[key]:
				cl.answer(Result{Err: ErrKeyInProgress})
				skip[cl] = true
			default:
				issuing[key] = true
			}
		}
	}
	// The date window, judged now that the keys are held: a member whose
	// date fell out of it is refused, and nothing else with its key can
	// commit meanwhile.
	if c.cfg.DateWindow != nil {
		now := judgedAt
		if now.IsZero() {
			now = c.now()
		}
		for _, cl := range calls {
			if skip[cl] {
				continue
			}
			if err := c.cfg.DateWindow.Check(cl.req.Draft.InvoiceDate, now); err != nil {
				cl.answer(Result{Err: err})
				skip[cl] = true
			}
		}
	}
	// The members to issue, per part, in arrival order.
	var groups []Group
	var members [][]*call
	for _, p := range parts {
		var ms []*call
		var drafts []document.Draft
		for _, cl := range p {
			if !skip[cl] {
				ms = append(ms, cl)
				drafts = append(drafts, cl.req.Draft)
			}
		}
		if len(ms) > 0 {
			groups = append(groups, Group{Seller: p[0].req.Seller, Series: p[0].req.Series, Drafts: drafts})
			members = append(members, ms)
		}
	}
	// Replays read committed rows; do it before the counter locks.
	replayed := map[*call]document.Invoice{}
	for cl, id := range replays {
		inv, err := Get(ctx, tx, cl.req.Seller.ID, id)
		if err != nil {
			return err
		}
		replayed[cl] = inv
	}
	var invs [][]document.Invoice
	var groupErrs []error
	var states []*series.State
	committed := false
	if len(groups) > 0 {
		invs, groupErrs, states, committed, err = issueMany(ctx, tx, groups, c.now(), opt, pipe != nil, whatIsLeft)
		if err != nil {
			return err
		}
	}
	if committed {
		pipe.committed()
	} else if err := tx.Commit(ctx); err != nil {
		return commitFailed(err)
	}
	// Stats first: an answered caller may read them at once.
	// A group's first members may be issued and the rest refused (the
	// series had fewer numbers left than members).
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
	for cl, inv := range replayed {
		cl.answer(Result{Invoice: inv, Replayed: true})
	}
	return nil
}

// begin starts a transaction: a pipeTx on a pool connection when c's
// transactions are pipelined (BEGIN and COMMIT then ride along with other
// statements), the database's own otherwise. end rolls back whatever was
// not committed, waiting at most 5 s (members of a failed batch are
// answered after it), and returns the connection. It fails when no
// connection or transaction can be had.
func (c *Committer) begin(ctx context.Context) (tx pgx.Tx, pipe *pipeTx, end func(), err error) {
	release := func() {}
	switch c.tx {
	case pipelined:
		conn, err := c.pool.Acquire(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		pipe = &pipeTx{conn: conn, plans: genericPlans}
		if c.cfg.Citus {
			pipe.plans = customPlans
		}
		tx, release = pipe, conn.Release
	case plain:
		if tx, err = c.db.Begin(ctx); err != nil {
			return nil, nil, nil, err
		}
	default:
		panic("invoice: a Committer made without its constructor")
	}
	return tx, pipe, func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tx.Rollback(rctx) // after COMMIT, ErrTxClosed: nothing to undo
		release()
	}, nil
}
