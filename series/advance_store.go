package series

import (
	"time"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL that writes a predicted counter row
// (QueueAdvance) and a chain's new head.

// QueueAdvanceChains queues on b one update storing the chain state of
// several series-years of sellers (parallel slices), after records were
// appended. The counter rows must already be locked by the transaction b
// runs in.
//
// Every statement of this package that reads or writes a seller's rows
// names the seller by a constant, seller_id = $n or seller_id = ANY($n),
// besides joining on it: Citus (docs/scale-out.md) routes a statement to
// the one shard its constants name, and sends one without them to every
// shard (a multi-shard write, committed in two phases). On plain
// PostgreSQL the extra condition is a filter on rows the index found.
func QueueAdvanceChains(b *pgx.Batch, sellers, seriesIDs []int64, fys []int32, lengths []int64, heads [][]byte) {
	b.Queue(`UPDATE series_counters c SET chain_length = u.len, chain_head = u.head
		FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::bytea[], $5::bigint[]) AS u(series_id, fy, len, head, seller_id)
		WHERE c.series_id = u.series_id AND c.fy = u.fy AND c.seller_id = u.seller_id AND c.seller_id = ANY ($5::bigint[])`,
		seriesIDs, fys, lengths, heads, sellers)
}

// IsMoved reports whether err is the error of a failed QueueAdvance check,
// as the database raised it or translated (ErrMoved): class db.RowMoved.
func IsMoved(err error) bool { return db.Classify(err) == db.RowMoved }

// QueueAdvance queues on b the statements that lock the rows of advs in a
// fixed order, check that each is still in the state its block was
// predicted from, and write each once with the block taken and the new
// chain state. When a row has moved since (another transaction took
// numbers or appended to its chain), the batch fails with an error for
// which IsMoved reports true, and the transaction is aborted having taken
// nothing; the caller rolls back and takes the numbers with NextMany. A
// lock wait past opt.LockTimeout fails with SQLSTATE 55P03 (lock not
// available). No two advs may share a series-year.
func QueueAdvance(b *pgx.Batch, advs []Advance, opt Options) {
	c := advanceColumnsOf(advs)
	QueueLockTimeout(b, opt)
	// ORDER BY sits below the row locking, so rows are locked in key order.
	b.Queue(`
		SELECT invoiced_require(count(*) = $6 AND bool_and(r.last_serial = u.last AND r.chain_length = u.len
			AND r.chain_head IS NOT DISTINCT FROM u.head), $7, 'counter row moved since it was predicted')
		FROM (SELECT c.series_id, c.fy, c.last_serial, c.chain_length, c.chain_head
		      FROM series_counters c JOIN unnest($1::bigint[], $2::int[], $8::bigint[]) AS k(series_id, fy, seller_id)
		        ON c.series_id = k.series_id AND c.fy = k.fy AND c.seller_id = k.seller_id
		      WHERE c.seller_id = ANY ($8::bigint[])
		      ORDER BY c.series_id, c.fy FOR UPDATE OF c) r
		JOIN unnest($1::bigint[], $2::int[], $3::bigint[], $4::bigint[], $5::bytea[]) AS u(series_id, fy, last, len, head)
		  ON r.series_id = u.series_id AND r.fy = u.fy`,
		c.ids, c.fys, c.lasts, c.lens0, c.heads0, len(advs), db.CodeRowMoved, c.sellers)
	QueueLockTimeoutRestore(b, opt)
	b.Queue(`
		UPDATE series_counters c SET last_serial = u.last, last_invoice_date = u.d, last_issued_at = u.at,
			chain_length = u.len, chain_head = u.head
		FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::date[], $5::timestamptz[], $6::bigint[], $7::bytea[], $8::bigint[])
			AS u(series_id, fy, last, d, at, len, head, seller_id)
		WHERE c.series_id = u.series_id AND c.fy = u.fy AND c.seller_id = u.seller_id AND c.seller_id = ANY ($8::bigint[])`,
		c.ids, c.fys, c.news, c.dates, c.ats, c.lens, c.heads, c.sellers)
}

// advanceColumns are advances as one array per column: the rows' keys
// (ids, fys, sellers), the predicted state (lasts, lens0, heads0) and the
// state after (news, dates, ats, lens, heads).
type advanceColumns struct {
	ids, sellers, lasts, lens0, news, lens []int64
	fys                                    []int32
	heads0, heads                          [][]byte
	dates, ats                             []time.Time
}

func advanceColumnsOf(advs []Advance) advanceColumns {
	n := len(advs)
	c := advanceColumns{ids: make([]int64, n), sellers: make([]int64, n), lasts: make([]int64, n), lens0: make([]int64, n),
		news: make([]int64, n), lens: make([]int64, n), fys: make([]int32, n), heads0: make([][]byte, n), heads: make([][]byte, n),
		dates: make([]time.Time, n), ats: make([]time.Time, n)}
	for i, a := range advs {
		c.ids[i], c.fys[i], c.sellers[i] = a.Block.Series.ID, int32(a.Block.FY), a.Block.Series.SellerID
		c.lasts[i], c.news[i] = a.Block.First-1, a.After.LastSerial
		c.lens0[i], c.heads0[i], c.lens[i], c.heads[i] = a.Block.ChainLength, a.Block.ChainHead, a.After.ChainLength, a.After.ChainHead
		c.dates[i], c.ats[i] = a.After.LastDate, a.After.LastIssuedAt
	}
	return c
}

// AdvanceArgs returns advs as the counter arguments of the database
// function invoiced_issue_rows_v2 (migrations 00029, 00041): the sellers, series,
// years, predicted last serials, chain lengths and heads, then the last
// serials, dates, issue times, chain lengths and heads after.
func AdvanceArgs(advs []Advance) []any {
	c := advanceColumnsOf(advs)
	return []any{c.sellers, c.ids, c.fys, c.lasts, c.lens0, c.heads0, c.news, c.dates, c.ats, c.lens, c.heads}
}
