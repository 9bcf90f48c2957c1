package series

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL that takes numbers from counter rows and locks them.

// Next takes the next number of s for an invoice dated date (a civil date in
// IST, see FYOf) inside the caller's transaction, stamped with now or, if the
// clock went back, the series-year's last issue time. See NextN.
func Next(ctx context.Context, tx pgx.Tx, s gst.Series, date, now time.Time, opt Options) (Block, error) {
	return NextN(ctx, tx, s, date, now, 1, opt)
}

// NextN takes n consecutive numbers of s for invoices dated date inside the
// caller's transaction. The counter row of (s, FY of date) is created on first
// use and stays locked until tx ends: a rollback returns the numbers, a commit
// makes them final. Call it as late as possible in the transaction, right
// before inserting the rows it numbers and committing: the time the lock is
// held caps the series' throughput (one writer per series-year).
//
// It returns ErrInvalidDate when date lies outside the supported financial
// years, ErrDateOutOfOrder when date is earlier than the series-year's last
// invoice date, ErrExhausted when the format has fewer than n numbers left,
// and ErrLockTimeout when opt.LockTimeout passes before the lock is had. After
// any error from the database the transaction is aborted and must be rolled
// back.
func NextN(ctx context.Context, tx pgx.Tx, s gst.Series, date, now time.Time, n int, opt Options) (Block, error) {
	blocks, errs, err := NextMany(ctx, tx, []Take{{Series: s, Date: date, N: n}}, now, opt)
	if err != nil {
		return Block{}, err
	}
	return blocks[0], errs[0]
}

// NextMany takes numbers for several series-years in one statement and one
// round trip, inside the caller's transaction: it is NextN for many series
// at once, so that one transaction and one COMMIT can number invoices of
// many series. The counter rows are locked in (series, year) order, so two
// transactions that each take their counter rows in one NextMany call never
// deadlock each other (one that calls NextN for one series and later for a
// series of lower id can; its lock timeout then ends the wait). Every row
// stays locked until tx ends.
// No two takes may name the same series-year.
//
// It returns a block and an error per take, in order: a take refused on
// its own (ErrInvalidDate, ErrDateOutOfOrder, ErrExhausted) has its error
// and a zero block, and consumed nothing. The last result is an error that
// concerns them all (ErrLockTimeout when some row stayed locked past
// opt.LockTimeout, a database error); the transaction is then aborted.
func NextMany(ctx context.Context, tx pgx.Tx, takes []Take, now time.Time, opt Options) ([]Block, []error, error) {
	blocks, errs, index, rows, err := checkTakes(takes)
	if err != nil || len(rows) == 0 {
		return blocks, errs, err
	}
	got := map[yearKey]bool{}
	// One round trip: the lock timeout (transaction-local, restored
	// afterwards) and the upsert are pipelined.
	batch := &pgx.Batch{}
	QueueLockTimeout(batch, opt)
	queueTakes(batch, rows, now, opt.Routed).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id, last int64
			var fy int32
			var b Block
			if err := rows.Scan(&id, &fy, &last, &b.IssuedAt, &b.ChainLength, &b.ChainHead); err != nil {
				return err
			}
			k := yearKey{id, gst.FY(fy)}
			i, ok := index[k]
			if !ok {
				return fmt.Errorf("series: counter row %d/%d not asked for", id, fy)
			}
			got[k] = true
			blocks[i].IssuedAt, blocks[i].ChainLength, blocks[i].ChainHead = b.IssuedAt, b.ChainLength, b.ChainHead
			blocks[i].First = last - int64(blocks[i].N) + 1
		}
		return rows.Err()
	})
	QueueLockTimeoutRestore(batch, opt)
	began := time.Now()
	err = tx.SendBatch(ctx, batch).Close()
	if opt.LockWaited != nil {
		opt.LockWaited(time.Since(began))
	}
	if err != nil {
		return nil, nil, translate(err, "take numbers")
	}
	for k, i := range index {
		if got[k] {
			continue
		}
		blocks[i] = Block{}
		var err error
		if errs[i], err = explainRefusal(ctx, tx, takes[i].Series, k.fy, takes[i].Date, takes[i].N); err != nil {
			return nil, nil, err
		}
	}
	return blocks, errs, nil
}

// yearKey names a counter row of NextMany: a series and a year.
type yearKey struct {
	id int64
	fy gst.FY
}

// counterTake is the row of series_counters NextMany's upsert sends for a
// take: n is the number of serials taken, date the take's invoice date.
type counterTake struct {
	seriesID int64
	fy       int32
	sellerID int64
	n        int64
	capacity int64
	date     time.Time
}

// checkTakes returns NextMany's blocks and errors for takes, with the
// takes refused on their own answered, the index of each series-year in
// takes, and the counter rows to upsert for the others. It fails when a
// take asks for fewer than one number or two name the same series-year.
func checkTakes(takes []Take) ([]Block, []error, map[yearKey]int, []counterTake, error) {
	blocks := make([]Block, len(takes))
	errs := make([]error, len(takes))
	index := map[yearKey]int{}
	var rows []counterTake
	for i, t := range takes {
		fy := gst.FYOf(t.Date)
		switch {
		case !fy.Valid():
			errs[i] = apperr.Errorf(gst.ErrInvalidDate, "invoice date %s is outside the supported financial years %s to %s", t.Date.Format(time.DateOnly), gst.FY(gst.MinFY), gst.FY(gst.MaxFY))
			continue
		case t.N < 1:
			return nil, nil, nil, nil, fmt.Errorf("series: NextMany: n = %d, want at least 1", t.N)
		case int64(t.N) > t.Series.Format.Capacity():
			errs[i] = apperr.Errorf(gst.ErrExhausted, "series %s holds only %d numbers a year", t.Series.Code, t.Series.Format.Capacity())
			continue
		}
		k := yearKey{t.Series.ID, fy}
		if _, dup := index[k]; dup {
			return nil, nil, nil, nil, fmt.Errorf("series: NextMany: series %d year %s taken twice in one call", t.Series.ID, fy)
		}
		index[k] = i
		blocks[i] = Block{Series: t.Series, FY: fy, N: t.N}
		rows = append(rows, counterTake{seriesID: t.Series.ID, fy: int32(fy), sellerID: t.Series.SellerID,
			n: int64(t.N), capacity: t.Series.Format.Capacity(), date: t.Date})
	}
	return blocks, errs, index, rows, nil
}

// takeUpsert advances a counter row inserted by queueTakes: by the serials
// taken, to the take's invoice date, and to the later of its issue time
// and the batch's; it refuses (returns no row) a date before the row's
// last or more serials than the format has left. It returns the row after.
const takeUpsert = `
		ON CONFLICT (series_id, fy, seller_id) DO UPDATE
		SET last_serial = c.last_serial + EXCLUDED.last_serial,
		    last_invoice_date = EXCLUDED.last_invoice_date,
		    last_issued_at = GREATEST(c.last_issued_at, EXCLUDED.last_issued_at)
		WHERE c.last_invoice_date <= EXCLUDED.last_invoice_date
		  AND c.last_serial + EXCLUDED.last_serial <= EXCLUDED.capacity
		RETURNING series_id, fy, last_serial, last_issued_at, chain_length, chain_head`

// takeCasts are the types of a counterTake's values in a row of the routed
// upsert's VALUES, in the order of its columns; the issue time, last,
// is the statement's $1.
var takeCasts = []string{"bigint", "int", "bigint", "bigint", "bigint", "date"}

// queueTakes queues on b the upsert of rows stamped now, which locks the
// counter rows in (series, year) order, so that two NextMany calls never
// wait for each other in a cycle. Routed (Citus), it is a multi-row
// VALUES, written in that order, whose rows name their sellers (so that
// Citus routes it to their worker); otherwise an INSERT … SELECT from
// unnest, ORDER BY fixing the order.
func queueTakes(b *pgx.Batch, rows []counterTake, now time.Time, routed bool) *pgx.QueuedQuery {
	if !routed {
		n := len(rows)
		ids, ns, caps, sellers := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		fys, dates := make([]int32, n), make([]time.Time, n)
		for i, r := range rows {
			ids[i], fys[i], sellers[i], ns[i], caps[i], dates[i] = r.seriesID, r.fy, r.sellerID, r.n, r.capacity, r.date
		}
		return b.Queue(`
		INSERT INTO series_counters AS c (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at)
		SELECT u.series_id, u.fy, u.seller_id, u.n, u.cap, u.d, $6
		FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::date[], $5::bigint[], $7::bigint[]) AS u(series_id, fy, n, d, cap, seller_id)
		ORDER BY u.series_id, u.fy`+takeUpsert,
			ids, fys, ns, dates, caps, now, sellers)
	}
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(a, b counterTake) int {
		return cmp.Or(cmp.Compare(a.seriesID, b.seriesID), cmp.Compare(a.fy, b.fy))
	})
	var sql strings.Builder
	sql.WriteString(`INSERT INTO series_counters AS c (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at) VALUES `)
	args := make([]any, 0, len(takeCasts)*len(rows)+1)
	args = append(args, now)
	for i, r := range rows {
		if i > 0 {
			sql.WriteString(", ")
		}
		args = writeRow(&sql, args, takeCasts, "$1::timestamptz", r.seriesID, r.fy, r.sellerID, r.n, r.capacity, r.date)
	}
	sql.WriteString(takeUpsert)
	return b.Queue(sql.String(), args...)
}

// writeRow writes to sql one row of VALUES: a placeholder for each of vals
// cast to its type in casts, numbered after args, then tail (SQL of the
// row's last values, "" for none); it returns args with vals appended.
func writeRow(sql *strings.Builder, args []any, casts []string, tail string, vals ...any) []any {
	var num [20]byte
	sql.WriteByte('(')
	for i, v := range vals {
		if i > 0 {
			sql.WriteString(", ")
		}
		args = append(args, v)
		sql.WriteByte('$')
		sql.Write(strconv.AppendInt(num[:0], int64(len(args)), 10))
		sql.WriteString("::")
		sql.WriteString(casts[i])
	}
	if tail != "" {
		sql.WriteString(", " + tail)
	}
	sql.WriteByte(')')
	return args
}

// explainRefusal reads the (already locked) counter row after the upsert's
// WHERE refused to advance it and returns the reason as the first result;
// the second is a database error.
func explainRefusal(ctx context.Context, tx pgx.Tx, s gst.Series, fy gst.FY, date time.Time, n int) (error, error) {
	var last int64
	var lastDate time.Time
	err := tx.QueryRow(ctx, `SELECT last_serial, last_invoice_date FROM series_counters WHERE series_id = $1 AND fy = $2 AND seller_id = $3`,
		s.ID, int(fy), s.SellerID).Scan(&last, &lastDate)
	if err != nil {
		return nil, translate(err, "read counter")
	}
	if date.Before(lastDate) {
		return apperr.Errorf(ErrDateOutOfOrder, "invoice date %s is earlier than %s, the last invoice date of series %s in %s",
			date.Format(time.DateOnly), lastDate.Format(time.DateOnly), s.Code, fy), nil
	}
	return apperr.Errorf(gst.ErrExhausted, "series %s has %d of %d numbers left in %s, %d asked", s.Code, s.Format.Capacity()-last, s.Format.Capacity(), fy, n), nil
}

// Counter returns the counter row of the seller's series seriesID in fy
// without locking it, or ErrNotFound when no number was ever taken there.
func Counter(ctx context.Context, q db.Querier, sellerID, seriesID int64, fy gst.FY) (Usage, error) {
	u := Usage{FY: fy}
	err := q.QueryRow(ctx, `SELECT last_serial, last_invoice_date, last_issued_at FROM series_counters WHERE series_id = $1 AND fy = $2 AND seller_id = $3`,
		seriesID, int(fy), sellerID).Scan(&u.LastSerial, &u.LastInvoiceDate, &u.LastIssuedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Usage{}, ErrNotFound
	}
	if err != nil {
		return Usage{}, translate(err, "read counter")
	}
	return u, nil
}

// LockChain locks the counter row of the seller's series seriesID in fy
// for a record that takes no number (a cancellation) and returns its chain
// state. It returns ErrNotFound when the row does not exist and
// ErrLockTimeout as NextN does.
func LockChain(ctx context.Context, tx pgx.Tx, sellerID, seriesID int64, fy gst.FY, opt Options) (length int64, head []byte, err error) {
	batch := &pgx.Batch{}
	QueueLockTimeout(batch, opt)
	batch.Queue(`SELECT chain_length, chain_head FROM series_counters WHERE series_id = $1 AND fy = $2 AND seller_id = $3 FOR UPDATE`,
		seriesID, int(fy), sellerID).QueryRow(func(row pgx.Row) error { return row.Scan(&length, &head) })
	QueueLockTimeoutRestore(batch, opt)
	err = tx.SendBatch(ctx, batch).Close()
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, ErrNotFound
	}
	return length, head, translate(err, "lock counter")
}

// QueueLockTimeout queues, when opt asks for one, a transaction-local
// lock_timeout for the statements queued after it, saving the
// transaction's own value so that QueueLockTimeoutRestore, queued after
// them, can put it back in the same round trip. A lock wait past it fails
// with SQLSTATE 55P03 (class db.LockTimeout), which the store packages
// translate to ErrLockTimeout.
//
// With opt.Routed (Citus) it is SET LOCAL, and the restore SET LOCAL … TO
// DEFAULT (the session's value, which invoiced never changes): a Citus
// coordinator passes SET LOCAL on to the workers of the transaction,
// where the row locks are waited for, but not a set_config() call.
func QueueLockTimeout(b *pgx.Batch, opt Options) {
	if opt.LockTimeout <= 0 {
		return
	}
	if opt.Routed {
		b.Queue("SET LOCAL lock_timeout = '" + opt.LockTimeoutSetting() + "'")
		return
	}
	b.Queue(`SELECT set_config('invoiced.saved_lock_timeout', current_setting('lock_timeout'), true),
	                set_config('lock_timeout', $1, true)`, opt.LockTimeoutSetting())
}

// LockTimeoutSetting returns opt.LockTimeout as a lock_timeout setting in
// whole milliseconds, at least 1 ("250ms"); "" when opt sets none.
func (opt Options) LockTimeoutSetting() string {
	if opt.LockTimeout <= 0 {
		return ""
	}
	return fmt.Sprintf("%dms", max(1, opt.LockTimeout.Milliseconds()))
}

// QueueLockTimeoutRestore queues the restore of the lock_timeout that
// QueueLockTimeout saved.
func QueueLockTimeoutRestore(b *pgx.Batch, opt Options) {
	if opt.LockTimeout <= 0 {
		return
	}
	if opt.Routed {
		b.Queue(`SET LOCAL lock_timeout TO DEFAULT`)
		return
	}
	b.Queue(`SELECT set_config('lock_timeout', current_setting('invoiced.saved_lock_timeout'), true)`)
}
