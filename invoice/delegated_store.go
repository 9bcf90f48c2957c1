package invoice

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/series"
)

// This file holds the SQL of a delegated batch (strategy.delegated,
// docs/scale-out.md "One call per batch"): a predicted transaction sent as
// one call of invoiced_issue_rows_v2 (migrations 00029, 00041), which Citus runs
// whole on the worker of the batch's shard.

// errNeedsEventIDs: the call found a seller subscribed to invoice.issued
// and had too few event ids for its invoices (IV006); nothing was taken.
var errNeedsEventIDs = errors.New("invoice: a subscribed seller's events need ids")

// takeEventIDs returns n ids of table events from its sequence (on Citus,
// the coordinator's), in ascending order, so that events inserted on a
// worker keep the order of those inserted through the coordinator. It
// fails when the database does.
func takeEventIDs(ctx context.Context, q db.Querier, n int) ([]int64, error) {
	var ids []int64
	if err := q.QueryRow(ctx, `SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM
		(SELECT nextval(pg_get_serial_sequence('events', 'id')) AS id FROM generate_series(1, $1)) s`, n).Scan(&ids); err != nil {
		return nil, translate(err, "take event ids")
	}
	return ids, nil
}

// issueDelegated is issuePredicted as one call of invoiced_issue_rows_v2 on
// conn, which must not be in a transaction: the call is its own. The
// groups' sellers must lie in one shard on Citus; eventIDs are ids for the
// events of subscribed sellers (takeEventIDs), at most one per invoice.
// When a prediction or precondition fails nothing was taken, and it
// returns an error matched by mispredicted, series.IsLeased, or
// errNeedsEventIDs; errPredictRefused before calling when some group's
// prediction says NextMany would refuse it. A failure after the call was
// sent that is not the database's answer is ErrOutcomeUnknown: the call
// may have committed.
func issueDelegated(ctx context.Context, conn db.Querier, groups []Group, predicted []series.State, claims []KeyClaim,
	window *dateWindow, now time.Time, opt series.Options, eventIDs []int64) (out [][]document.Invoice, states []*series.State, err error) {
	w, advs, err := predictWrites(groups, predicted, now)
	if err != nil {
		return nil, nil, err
	}
	var lockTimeout *string
	if t := opt.LockTimeoutSetting(); t != "" {
		lockTimeout = &t
	}
	var first, last *time.Time
	var backdate *int
	if window != nil {
		first, last, backdate = &window.First, &window.Last, &window.BackdateDays
	}
	keyInvoices, keyNames, keyHashes, err := keyArgs(w)
	if err != nil {
		return nil, nil, err
	}
	// The function locks the counter rows in the order given: the order
	// NextMany locks them in, (series, year), so that two writers of the
	// same rows never wait for each other in a cycle.
	slices.SortFunc(advs, func(a, b series.Advance) int {
		return cmp.Or(cmp.Compare(a.Block.Series.ID, b.Block.Series.ID), cmp.Compare(a.Block.FY, b.Block.FY))
	})
	args := append([]any{groups[0].Seller.ID}, series.AdvanceArgs(advs)...)
	args = append(args, lockTimeout, lockNames(claims), first, last, backdate)
	args = append(args, arrays(invoiceTable, w.invoices)...)
	args = append(args, keyInvoices, keyNames, keyHashes)
	args = append(args, arrays(chainTable, w.chain)...)
	args = append(args, eventIDs)
	var got []int64
	err = conn.QueryRow(ctx, issueRowsSQL, args...).Scan(&got)
	if err != nil {
		return nil, nil, delegatedFailed(err)
	}
	if len(got) != len(w.all) {
		// The call committed: the invoices are stored, their ids unknown.
		return nil, nil, apperr.WithCause(ErrOutcomeUnknown, fmt.Errorf("invoice: %d ids for %d invoices", len(got), len(w.all)))
	}
	for i, inv := range w.all {
		inv.ID = got[i]
	}
	return w.out, w.states, nil
}

// delegatedFailed returns the error of a failed invoiced_issue_rows_v2 call:
// ErrKeyRace for a key already used, errNeedsEventIDs, the database's
// error (translated) for an answer that says the call rolled back, and
// ErrOutcomeUnknown for any other failure (db.ClassifyDelegated): the call
// may have committed.
func delegatedFailed(err error) error {
	switch {
	case keyTaken(err):
		return apperr.WithCause(ErrKeyRace, err)
	case db.SQLState(err) == db.CodeEventIDsShort:
		return errNeedsEventIDs
	case db.ClassifyDelegated(err) == db.OutcomeUnknown:
		return apperr.WithCause(ErrOutcomeUnknown, err)
	}
	return translate(err, "issue batch")
}

// keyArgs returns w's idempotency keys as invoiced_issue_rows_v2's key
// arguments: each key's invoice as its 1-based position in w.invoices,
// the keys and the request hashes. When a key names no invoice of w (a
// bug) it returns errPredictRefused, so that the batch goes the ordinary
// way, which writes keys by their invoice's series and serial.
func keyArgs(w *writes) (invoices []int32, keys []string, hashes [][]byte, err error) {
	if len(w.keys) == 0 {
		return nil, nil, nil, nil
	}
	type at struct {
		seller, series int64
		fy             int32
		serial         int64
	}
	pos := make(map[at]int32, len(w.invoices))
	for i, r := range w.invoices {
		pos[at{r.sellerID, r.seriesID, r.fy, r.serial}] = int32(i + 1)
	}
	for _, k := range w.keys {
		p, ok := pos[at{k.sellerID, k.seriesID, k.fy, k.serial}]
		if !ok {
			return nil, nil, nil, fmt.Errorf("%w: key %q names no invoice of the batch", errPredictRefused, k.key)
		}
		invoices, keys, hashes = append(invoices, p), append(keys, k.key), append(hashes, k.requestHash)
	}
	return invoices, keys, hashes, nil
}

// param is a parameter of invoiced_issue_rows_v2: its name and type.
type param struct{ name, typ string }

// issueRowsParams are invoiced_issue_rows_v2's parameters (migration
// 00041) in the order issueDelegated sends its arguments: the seller, the
// counter rows (series.AdvanceArgs), the guards, invoiceTable's columns,
// the keys (keyArgs), chainTable's columns, the event ids.
var issueRowsParams = slices.Concat(
	[]param{{"p_seller", "bigint"},
		{"c_seller", "bigint[]"}, {"c_series", "bigint[]"}, {"c_fy", "int[]"}, {"c_last", "bigint[]"}, {"c_len", "bigint[]"}, {"c_head", "bytea[]"},
		{"c_new_last", "bigint[]"}, {"c_new_date", "date[]"}, {"c_new_at", "timestamptz[]"}, {"c_new_len", "bigint[]"}, {"c_new_head", "bytea[]"},
		{"p_lock_timeout", "text"}, {"p_key_locks", "text[]"}, {"p_first", "date"}, {"p_last", "date"}, {"p_backdate_days", "int"}},
	paramsOf(invoiceTable),
	[]param{{"k_invoice", "int[]"}, {"k_key", "text[]"}, {"k_hash", "bytea[]"}},
	paramsOf(chainTable),
	[]param{{"p_event_ids", "bigint[]"}})

// paramsOf returns the parameters of invoiced_issue_rows_v2 that carry
// cols' arrays, in the order of arrays(cols, …). A column sent without a
// parameter is a bug in the table, and panics when the package loads.
func paramsOf[R any](cols []column[R]) []param {
	var ps []param
	for _, c := range sent(cols) {
		if c.param == "" {
			panic("invoice: column " + c.name + " names no parameter of invoiced_issue_rows_v2")
		}
		ps = append(ps, param{c.param, c.typ + "[]"})
	}
	return ps
}

// issueRowsSQL calls invoiced_issue_rows_v2 in named notation with every
// argument typed: "p_seller => $1::bigint, c_seller => $2::bigint[], …".
var issueRowsSQL = func() string {
	args := make([]string, len(issueRowsParams))
	for i, p := range issueRowsParams {
		args[i] = p.name + " => $" + strconv.Itoa(i+1) + "::" + p.typ
	}
	return "SELECT invoiced_issue_rows_v2(" + strings.Join(args, ", ") + ")"
}()

// issueDelegated issues a predicted batch as one call (strategy.delegated)
// on a connection of c's pool. It returns errPredictRefused, having sent
// nothing, when a group is dated in a month that may have ended by the
// time the call runs (the ordinary path takes the period guard); otherwise
// it takes event ids for the sellers c knows to subscribe and returns
// what the package's issueDelegated returns.
func (c *Committer) issueDelegated(ctx context.Context, groups []Group, predicted []series.State, claims []KeyClaim,
	window *dateWindow, now time.Time, opt series.Options) ([][]document.Invoice, []*series.State, error) {
	events := 0
	for _, g := range groups {
		if nearMonthEnd(g.Drafts[0].InvoiceDate, now) {
			return nil, nil, errPredictRefused
		}
		if _, ok := c.subscribers.Load(g.Seller.ID); ok {
			events += len(g.Drafts)
		}
	}
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, translate(err, "begin")
	}
	defer conn.Release()
	var eventIDs []int64
	if events > 0 {
		if eventIDs, err = takeEventIDs(ctx, conn, events); err != nil {
			return nil, nil, err
		}
	}
	return issueDelegated(ctx, conn, groups, predicted, claims, window, now, opt, eventIDs)
}
