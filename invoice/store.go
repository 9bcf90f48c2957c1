package invoice

import (
	"context"
	"errors"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL of issuing, cancelling and reading invoices and
// of idempotency keys; database errors are translated where they arise.

// IssueTx numbers drafts, in order, with consecutive serials of s and
// inserts them, their chain records and their idempotency keys inside tx.
// All drafts must share one invoice date. Everything that can be done
// before the counter lock is done first; the lock is then held for one
// round trip of writes plus the caller's COMMIT.
//
// It returns the errors of series.NextN (date out of order, exhausted,
// lock timeout), ErrKeyRace when another transaction recorded one of the
// idempotency keys first, and database errors. After a refusal of the
// series (invalid date, date out of order, exhausted) tx is still usable
// and nothing was taken; after any other error it is aborted.
func IssueTx(ctx context.Context, tx pgx.Tx, seller gst.Seller, s gst.Series, drafts []document.Draft, now time.Time, opt series.Options) ([]document.Invoice, error) {
	if len(drafts) == 0 {
		return nil, nil
	}
	invs, errs, err := IssueManyTx(ctx, tx, []Group{{Seller: seller, Series: s, Drafts: drafts}}, now, opt)
	if err != nil {
		return nil, err
	}
	return invs[0], errs[0]
}

// Group is drafts to number in one series: all of one invoice date.
type Group struct {
	Seller gst.Seller
	Series gst.Series
	Drafts []document.Draft
}

// IssueManyTx is IssueTx for several series at once: one statement takes
// the numbers of every group (series.NextMany, counter rows locked in a
// fixed order) and one pipelined round trip writes every invoice, chain
// record, chain head and idempotency key, so one COMMIT makes invoices of
// many series durable together. No two groups may share a series and
// financial year.
//
// It returns the invoices and an error per group: a group refused on its
// own (date out of order, exhausted, invalid date) has its error, consumed
// nothing, and leaves the others unaffected. The last result is an error
// that concerns them all (lock timeout, ErrKeyRace, a database error); tx
// is then aborted. A malformed call (a group without drafts or with mixed
// dates) fails before touching tx.
func IssueManyTx(ctx context.Context, tx pgx.Tx, groups []Group, now time.Time, opt series.Options) ([][]document.Invoice, []error, error) {
	invs, errs, _, err := issueMany(ctx, tx, groups, now, opt, allOrNothing, leaveOpen)
	return invs, errs, err
}

// fillMode says what issueMany does with a group that asks for more
// numbers than its series has left.
type fillMode int

const (
	// allOrNothing refuses the group whole (IssueManyTx: one caller's
	// drafts are issued together or not at all).
	allOrNothing fillMode = iota
	// whatIsLeft issues the numbers left to the group's first drafts and
	// refuses only the rest (the Committer: each draft is a request of
	// its own, and its answer must not depend on which others it was
	// batched with).
	whatIsLeft
)

// txEnd says whether issueMany ends its transaction.
type txEnd int

const (
	// leaveOpen leaves the transaction to its caller (IssueManyTx).
	leaveOpen txEnd = iota
	// commitAtEnd commits it: a pipelined transaction (pipeTx) ends its
	// round trip of writes with COMMIT, any other sends COMMIT after.
	commitAtEnd
)

// issueMany is IssueManyTx, which with end commitAtEnd also commits tx.
// states holds, per group issued, the counter row's state after the
// transaction (nil for a group refused). With fill whatIsLeft, a group
// may be issued in part: out[g] then holds the invoices of its first
// drafts and errs[g] (ErrExhausted) is the answer for the rest. The
// error of a failed COMMIT is commitFailed's.
func issueMany(ctx context.Context, tx pgx.Tx, groups []Group, now time.Time, opt series.Options, fill fillMode, end txEnd) (out [][]document.Invoice, errs []error, states []*series.State, err error) {
	w, errs, err := numberMany(ctx, tx, groups, now, opt, fill)
	if err != nil {
		return nil, nil, nil, err
	}
	_, pipelined := tx.(*pipeTx)
	inWrites := end == commitAtEnd && pipelined && len(w.all) > 0 // COMMIT rides along
	if len(w.all) > 0 {
		batch := &pgx.Batch{}
		// Under the counter locks NextMany took; by what is written, not by
		// errs, which also refuses the tail of a group issued in part.
		guard := queuePeriodGuard(batch, groups, w.out, now)
		if opt.Routed {
			err = w.sendRouted(ctx, tx, batch, inWrites)
		} else {
			w.queue(batch)
			w.queueHeads(batch)
			err = sendWrites(ctx, tx, batch, inWrites)
		}
		if err != nil {
			return nil, nil, nil, guard.translate(err)
		}
	}
	if end == commitAtEnd && !inWrites {
		if err := tx.Commit(ctx); err != nil {
			return nil, nil, nil, commitFailed(err)
		}
	}
	return w.out, errs, w.states, nil
}

// numberMany takes the numbers of groups (series.NextMany; with fill
// whatIsLeft, what a row has left) and returns the rows to write and an
// error per group: a group refused on its own, or the refusal of a
// group's tail (ErrExhausted). It returns a database error, after which
// tx is aborted, or sealGroups' error before touching tx.
func numberMany(ctx context.Context, tx pgx.Tx, groups []Group, now time.Time, opt series.Options, fill fillMode) (*writes, []error, error) {
	seals, takes, err := sealGroups(groups)
	if err != nil {
		return nil, nil, err
	}
	if fill == whatIsLeft {
		for g := range takes {
			// More than a year holds is refused without reading the row.
			takes[g].N = int(min(int64(takes[g].N), takes[g].Series.Format.Capacity()))
		}
	}
	blocks, errs, err := series.NextMany(ctx, tx, takes, now, opt)
	if err != nil {
		return nil, nil, err
	}
	if fill == whatIsLeft {
		if err := takeWhatIsLeft(ctx, tx, takes, blocks, errs, now, opt); err != nil {
			return nil, nil, err
		}
	}
	// Under the locks: number and chain.
	w := numberGroups(groups, blocks, errs, seals)
	for g, gr := range groups {
		if errs[g] == nil && blocks[g].N < len(gr.Drafts) {
			errs[g] = apperr.Errorf(gst.ErrExhausted, "series %s has no numbers left in %s: the last %d went to requests that came first",
				gr.Series.Code, blocks[g].FY, blocks[g].N)
		}
	}
	return w, errs, nil
}

// sendRouted sends b with w's writes in the routed form (routed_store.go):
// one round trip for the invoices, keys, chain records and heads, and one
// for the events of subscribed sellers, which ends with COMMIT when commit
// is set (alone when no seller subscribes). It fails as sendWrites does.
func (w *writes) sendRouted(ctx context.Context, tx pgx.Tx, b *pgx.Batch, commit bool) error {
	subscribed := map[int64]bool{}
	w.queueRouted(b, subscribed)
	w.queueHeads(b)
	if err := sendWrites(ctx, tx, b, false); err != nil {
		return err
	}
	events := &pgx.Batch{}
	queued := queueEvents(events, w.all, EventIssued, func(inv *document.Invoice) time.Time { return inv.IssuedAt }, subscribed)
	if !queued && !commit {
		return nil
	}
	return sendWrites(ctx, tx, events, commit)
}

// takeWhatIsLeft takes, for every take refused ErrExhausted by NextMany
// (whose counter row tx then holds locked), the numbers its row has left,
// and puts their block in place of the refusal; a row with none left
// keeps its refusal. It returns a database error, after which tx is
// aborted.
func takeWhatIsLeft(ctx context.Context, tx pgx.Tx, takes []series.Take, blocks []series.Block, errs []error, now time.Time, opt series.Options) error {
	var retakes []series.Take
	var at []int
	for g, t := range takes {
		if !errors.Is(errs[g], gst.ErrExhausted) {
			continue
		}
		u, err := series.Counter(ctx, tx, t.Series.SellerID, t.Series.ID, gst.FYOf(t.Date))
		if err != nil {
			return err
		}
		if left := t.Series.Format.Capacity() - u.LastSerial; left > 0 && left < int64(t.N) {
			retakes = append(retakes, series.Take{Series: t.Series, Date: t.Date, N: int(left)})
			at = append(at, g)
		}
	}
	if len(retakes) == 0 {
		return nil
	}
	bs, es, err := series.NextMany(ctx, tx, retakes, now, opt)
	if err != nil {
		return err
	}
	for i, g := range at {
		if es[i] == nil {
			blocks[g], errs[g] = bs[i], nil
		}
	}
	return nil
}

// commitFailed returns the error of a COMMIT that failed with err:
// ErrOutcomeUnknown when the server may have committed (class
// db.OutcomeUnknown: the answer was lost), and otherwise, a definite
// rollback, err translated.
func commitFailed(err error) error {
	if db.ClassifyCommit(err) == db.OutcomeUnknown {
		return apperr.WithCause(ErrOutcomeUnknown, err)
	}
	return translate(err, "commit")
}

// Issue numbers and stores one draft in its own transaction and returns it.
// See IssueTx for the errors.
func Issue(ctx context.Context, b db.Beginner, seller gst.Seller, s gst.Series, d document.Draft, now time.Time, opt series.Options) (document.Invoice, error) {
	var invs []document.Invoice
	err := db.InTx(ctx, b, func(tx pgx.Tx) (err error) {
		invs, err = IssueTx(ctx, tx, seller, s, []document.Draft{d}, now, opt)
		return err
	})
	if err != nil {
		return document.Invoice{}, txFailed(err)
	}
	return invs[0], nil
}

// translate returns err as db.Translate does (series.ErrLockTimeout,
// series.ErrMoved), otherwise wrapped as "invoice: what: err"; nil stays
// nil.
func translate(err error, what string) error {
	if series.IsLeased(err) {
		return apperr.WithCause(series.ErrLeased, err)
	}
	return db.Translate(err, "invoice: "+what)
}

// txFailed returns the error of db.InTx as this package's callers see it:
// fn's error unchanged, BEGIN's translated, COMMIT's as commitFailed says.
func txFailed(err error) error {
	if te, ok := err.(*db.TxError); ok && te.Op == db.OpCommit {
		return commitFailed(te.Err)
	}
	return db.TranslateTx(err, "invoice")
}
