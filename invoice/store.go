package invoice

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shopspring/decimal"
)

// This file holds the package's SQL; pgx errors are translated here.

// Beginner starts transactions: *pgxpool.Pool and *pgx.Conn satisfy it.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

var publicIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newPublicID returns 128 random bits as 26 lower-case base32 characters.
func newPublicID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand documents it)
	return publicIDEncoding.EncodeToString(b[:])
}

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
func IssueTx(ctx context.Context, tx pgx.Tx, seller series.Seller, s series.Series, drafts []Draft, now time.Time, opt series.Options) ([]Invoice, error) {
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
	Seller series.Seller
	Series series.Series
	Drafts []Draft
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
func IssueManyTx(ctx context.Context, tx pgx.Tx, groups []Group, now time.Time, opt series.Options) ([][]Invoice, []error, error) {
	invs, errs, _, _, err := issueMany(ctx, tx, groups, now, opt, false, allOrNothing)
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

// issueMany is IssueManyTx; with commit set it ends its last round trip of
// writes with COMMIT and reports whether it did (committed is then true
// when err is nil and something was written). states holds, per group
// issued, the counter row's state after the transaction (nil for a group
// refused). With fill whatIsLeft, a group may be issued in part: out[g]
// then holds the invoices of its first drafts and errs[g] (ErrExhausted)
// is the answer for the rest.
func issueMany(ctx context.Context, tx pgx.Tx, groups []Group, now time.Time, opt series.Options, commit bool, fill fillMode) (out [][]Invoice, errs []error, states []*series.State, committed bool, err error) {
	seals, takes, err := sealGroups(groups)
	if err != nil {
		return nil, nil, nil, false, err
	}
	if fill == whatIsLeft {
		for g := range takes {
			// More than a year holds is refused without reading the row.
			takes[g].N = int(min(int64(takes[g].N), takes[g].Series.Format.Capacity()))
		}
	}
	blocks, errs, err := series.NextMany(ctx, tx, takes, now, opt)
	if err != nil {
		return nil, nil, nil, false, err
	}
	if fill == whatIsLeft {
		if err := takeWhatIsLeft(ctx, tx, takes, blocks, errs, now, opt); err != nil {
			return nil, nil, nil, false, err
		}
	}
	// Under the locks: number, chain, and one pipelined round trip of writes.
	w := numberGroups(groups, blocks, errs, seals)
	for g, gr := range groups {
		if errs[g] == nil && blocks[g].N < len(gr.Drafts) {
			errs[g] = apperr.Errorf(series.ErrExhausted, "series %s has no numbers left in %s: the last %d went to requests that came first",
				gr.Series.Code, blocks[g].FY, blocks[g].N)
		}
	}
	if len(w.all) == 0 {
		return w.out, errs, w.states, false, nil
	}
	batch := &pgx.Batch{}
	// Under the counter locks NextMany took; by what is written, not by
	// errs, which also refuses the tail of a group issued in part.
	guard := queuePeriodGuard(batch, groups, w.out, now)
	w.queue(batch)
	series.QueueAdvanceChains(batch, w.hSeries, w.hFY, w.hLength, w.hHead)
	committed, err = sendWrites(ctx, tx, batch, commit)
	if err != nil {
		return nil, nil, nil, false, guard.translate(err)
	}
	return w.out, errs, w.states, committed, nil
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
		if !errors.Is(errs[g], series.ErrExhausted) {
			continue
		}
		u, err := series.Counter(ctx, tx, t.Series.ID, series.FYOf(t.Date))
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

// issuePredicted is issueMany for a transaction whose counter rows are
// predicted to be in the states given (one per group, from the previous
// transaction that wrote them): everything, from the idempotency key
// claims (claims, all expected fresh) to COMMIT, goes in one round trip.
// The database checks the predictions under the locks, each key's lock,
// and (by the unique index, when the keys are inserted) that no key was
// used before; when one fails, the transaction took nothing and
// issuePredicted returns an error matched by mispredicted, after which the
// caller rolls back and issues the groups the ordinary way. It returns
// errPredictRefused, before touching tx, when some group's prediction says
// NextMany would refuse it.
// tx must be fresh: the round trip ends with COMMIT.
func issuePredicted(ctx context.Context, tx pgx.Tx, groups []Group, predicted []series.State, claims []KeyClaim, window *dateWindow, now time.Time, opt series.Options) (out [][]Invoice, states []*series.State, err error) {
	seals, takes, err := sealGroups(groups)
	if err != nil {
		return nil, nil, err
	}
	blocks := make([]series.Block, len(groups))
	for g, t := range takes {
		var ok bool
		if blocks[g], ok = series.Predict(t, predicted[g], now); !ok {
			return nil, nil, errPredictRefused
		}
	}
	w := numberGroups(groups, blocks, make([]error, len(groups)), seals)
	batch := &pgx.Batch{}
	if len(claims) > 0 {
		queueRequireKeyLocks(batch, claims)
	}
	if window != nil {
		window.queueRequire(batch)
	}
	advs := make([]series.Advance, len(groups))
	for g := range groups {
		advs[g] = series.Advance{Block: blocks[g], After: *w.states[g]}
	}
	series.QueueAdvance(batch, advs, opt)
	// Under the counter locks QueueAdvance took. A locked month fails the
	// round trip like a misprediction: the ordinary path answers it.
	queuePeriodGuard(batch, groups, w.out, now)
	w.queue(batch)
	if _, err := sendWrites(ctx, tx, batch, true); err != nil {
		return nil, nil, err
	}
	return w.out, w.states, nil
}

// errPredictRefused: a predicted group would be refused by NextMany.
var errPredictRefused = errors.New("invoice: prediction says the series refuses the group")

// mispredicted reports whether issuePredicted failed because the database
// refused a prediction (IsMoved), an idempotency key's lock (codeKeyHeld),
// a key already used (ErrKeyRace: the unique index refused its row) or an
// invoice date outside the window by the database's clock
// (codeOutOfWindow), or a backdated invoice's month locked
// (codePeriodLocked); nothing was taken.
func mispredicted(err error) bool {
	var pg *pgconn.PgError
	return series.IsMoved(err) || errors.Is(err, ErrKeyRace) ||
		errors.As(err, &pg) && (pg.Code == codeKeyHeld || pg.Code == codeOutOfWindow || pg.Code == codePeriodLocked)
}

// codeKeyHeld is the SQLSTATE queueRequireKeyLocks raises, codeOutOfWindow
// the one dateWindow.queueRequire raises (invoiced_require, migration
// 00002).
const (
	codeKeyHeld     = "IV002"
	codeOutOfWindow = "IV004"
)

// dateWindow is the span of invoice dates of a predicted transaction, for
// the database to check against Policy{BackdateDays} by its own clock.
type dateWindow struct {
	First, Last  time.Time
	BackdateDays int
}

// queueRequire queues on b a requirement that every date of w lies in the
// window on the database's today (IST), read when the statement runs:
// after the statements queued before it (the keys' locks).
func (w *dateWindow) queueRequire(b *pgx.Batch) {
	b.Queue(`SELECT invoiced_require($1::date >= t.today - $3::int AND $2::date <= t.today, $4, 'an invoice date is outside the window')
		FROM (SELECT (clock_timestamp() AT TIME ZONE 'Asia/Kolkata')::date AS today) t`,
		w.First, w.Last, w.BackdateDays, codeOutOfWindow)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// queueRequireKeyLocks queues on b the advisory lock of every key (see
// ClaimKeys) as a requirement: the transaction aborts unless each is had.
// Whether a key was used before is not read here: the key's insert, later
// in the same transaction, fails on the unique index if so. That costs a
// replay (rare: a client retrying after a lost answer) the inserts before
// the failure, and saves every batch a statement that looked up each of
// its keys, about a fifth of the batch's database time under load.
func queueRequireKeyLocks(b *pgx.Batch, claims []KeyClaim) {
	b.Queue(`SELECT invoiced_require(bool_and(pg_try_advisory_xact_lock(hashtextextended(k, 0))), $2, 'an idempotency key is held by another transaction')
		FROM unnest($1::text[]) AS u(k)`, lockNames(claims), codeKeyHeld)
}

// keyLockName names the advisory lock of a seller's idempotency key.
func keyLockName(sellerID int64, key string) string {
	return strconv.FormatInt(sellerID, 10) + "/" + key
}

// lockNames returns the name of each claim's advisory lock (keyLockName).
func lockNames(claims []KeyClaim) []string {
	names := make([]string, len(claims))
	for i, c := range claims {
		names[i] = keyLockName(c.SellerID, c.Key)
	}
	return names
}

// sealGroups checks groups and returns each draft's sealed parts (worked
// out before the lock) and each group's take.
func sealGroups(groups []Group) ([][]*sealed, []series.Take, error) {
	takes := make([]series.Take, len(groups))
	seals := make([][]*sealed, len(groups))
	for g, gr := range groups {
		if len(gr.Drafts) == 0 {
			return nil, nil, fmt.Errorf("invoice: IssueManyTx: group %d has no drafts", g)
		}
		date := gr.Drafts[0].InvoiceDate
		seals[g] = make([]*sealed, len(gr.Drafts))
		for i := range gr.Drafts {
			d := &gr.Drafts[i]
			if !d.InvoiceDate.Equal(date) {
				return nil, nil, fmt.Errorf("invoice: drafts of one group must share an invoice date")
			}
			// The items' JSON, the totals as text and the content part of
			// the chain record (Prepare did it already).
			var err error
			if seals[g][i], err = d.seal(); err != nil {
				return nil, nil, err
			}
		}
		takes[g] = series.Take{Series: gr.Series, Date: date, N: len(gr.Drafts)}
	}
	return seals, takes, nil
}

// writes is what one transaction inserts, as parallel columns.
type writes struct {
	out                              [][]Invoice
	states                           []*series.State
	all                              []*Invoice
	sellerIDs, seriesIDs, serials    []int64
	fys                              []int32
	dates, issuedAt                  []time.Time
	numbers, publicIDs, pos, items   []string
	bGSTIN, bName, origNum           []*string
	origDate                         []*time.Time
	taxable, cgst, sgst, igst, total []string
	cSeries, cPositions, cSerials    []int64
	cFY                              []int32
	cAt                              []time.Time
	cHashes                          [][]byte
	origExt                          []*string
	hSeries, hLength                 []int64
	hFY                              []int32
	hHead                            [][]byte
	kSeller, kSeries, kSerial        []int64
	kFY                              []int32
	keys                             []string
	keyHashes                        [][]byte
}

// numberGroups numbers and chains the drafts of every group not refused
// (errs) with its block and returns the rows to write.
func numberGroups(groups []Group, blocks []series.Block, errs []error, seals [][]*sealed) *writes {
	w := &writes{out: make([][]Invoice, len(groups)), states: make([]*series.State, len(groups))}
	for g, gr := range groups {
		if errs[g] != nil {
			continue
		}
		b := blocks[g]
		invs := make([]Invoice, b.N)
		w.out[g] = invs
		head := b.ChainHead
		for i, d := range gr.Drafts[:b.N] {
			inv := &invs[i]
			*inv = Invoice{
				PublicID: newPublicID(), SellerID: gr.Seller.ID, SeriesID: gr.Series.ID, SeriesCode: gr.Series.Code,
				DocType: gr.Series.DocType, FY: b.FY, Serial: b.Serial(i), Number: b.Number(i),
				InvoiceDate: d.InvoiceDate, IssuedAt: b.IssuedAt, Status: StatusIssued, Buyer: d.Buyer,
				PlaceOfSupply: d.PlaceOfSupply, Original: d.Original, Items: d.Items, Totals: d.Totals,
			}
			w.all = append(w.all, inv)
			position := b.ChainLength + int64(i) + 1
			sl := seals[g][i]
			head = issueHash(string(gr.Seller.GSTIN), inv, position, head, sl.content)

			w.sellerIDs, w.seriesIDs, w.serials = append(w.sellerIDs, gr.Seller.ID), append(w.seriesIDs, gr.Series.ID), append(w.serials, inv.Serial)
			w.fys, w.dates, w.issuedAt = append(w.fys, int32(b.FY)), append(w.dates, inv.InvoiceDate), append(w.issuedAt, inv.IssuedAt)
			w.numbers, w.publicIDs, w.pos, w.items = append(w.numbers, inv.Number), append(w.publicIDs, inv.PublicID), append(w.pos, inv.PlaceOfSupply), append(w.items, sl.itemsJSON)
			var bg, bn, on, oext *string
			var od *time.Time
			if inv.Buyer != nil {
				if inv.Buyer.GSTIN != "" {
					bg = &inv.Buyer.GSTIN
				}
				if inv.Buyer.Name != "" {
					bn = &inv.Buyer.Name
				}
			}
			if inv.Original != nil {
				on, od = &inv.Original.Number, &inv.Original.InvoiceDate
				if inv.Original.ExternalReason != "" {
					oext = &inv.Original.ExternalReason
				}
			}
			w.bGSTIN, w.bName, w.origNum, w.origDate = append(w.bGSTIN, bg), append(w.bName, bn), append(w.origNum, on), append(w.origDate, od)
			w.origExt = append(w.origExt, oext)
			w.taxable, w.cgst, w.sgst = append(w.taxable, sl.money[0]), append(w.cgst, sl.money[1]), append(w.sgst, sl.money[2])
			w.igst, w.total = append(w.igst, sl.money[3]), append(w.total, sl.money[4])

			w.cSeries, w.cFY, w.cPositions, w.cSerials = append(w.cSeries, gr.Series.ID), append(w.cFY, int32(b.FY)), append(w.cPositions, position), append(w.cSerials, inv.Serial)
			w.cAt, w.cHashes = append(w.cAt, inv.IssuedAt), append(w.cHashes, head)
			if d.IdempotencyKey != "" {
				w.kSeller, w.kSeries, w.kFY, w.kSerial = append(w.kSeller, gr.Seller.ID), append(w.kSeries, gr.Series.ID), append(w.kFY, int32(b.FY)), append(w.kSerial, inv.Serial)
				w.keys, w.keyHashes = append(w.keys, d.IdempotencyKey), append(w.keyHashes, d.RequestHash)
			}
		}
		length := b.ChainLength + int64(b.N)
		w.hSeries, w.hFY, w.hLength, w.hHead = append(w.hSeries, gr.Series.ID), append(w.hFY, int32(b.FY)), append(w.hLength, length), append(w.hHead, head)
		st := b.After(gr.Drafts[0].InvoiceDate, length, head)
		w.states[g] = &st
	}
	return w
}

// queue queues on b the statements inserting w: one inserts the invoices
// and their idempotency keys and returns the ids, one the chain records.
func (w *writes) queue(b *pgx.Batch) {
	b.Queue(`
		WITH ins AS (
			INSERT INTO invoices (seller_id, series_id, fy, serial, number, invoice_date, issued_at, public_id,
				buyer_gstin, buyer_name, place_of_supply, original_number, original_date, items,
				taxable, cgst, sgst, igst, total, original_external_reason)
			SELECT u.seller_id, u.series_id, u.fy, u.serial, u.number, u.d, u.at, u.public_id,
				u.bg, u.bn, u.pos, u.onum, u.odate, u.items::jsonb,
				u.taxable::numeric, u.cgst::numeric, u.sgst::numeric, u.igst::numeric, u.total::numeric, u.oext
			FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::bigint[], $5::text[], $6::date[], $7::timestamptz[],
				$8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::date[], $14::text[],
				$15::text[], $16::text[], $17::text[], $18::text[], $19::text[], $26::text[])
				AS u(seller_id, series_id, fy, serial, number, d, at, public_id, bg, bn, pos, onum, odate, items,
				taxable, cgst, sgst, igst, total, oext)
			RETURNING id, seller_id, series_id, fy, serial, issued_at
		), `+issuedEventsSQL+`, keys AS (
			INSERT INTO idempotency_keys (seller_id, key, request_hash, invoice_id)
			SELECT k.seller_id, k.key, k.hash, ins.id
			FROM unnest($20::bigint[], $21::bigint[], $22::int[], $23::bigint[], $24::text[], $25::bytea[])
				AS k(seller_id, series_id, fy, serial, key, hash)
			JOIN ins ON ins.series_id = k.series_id AND ins.fy = k.fy AND ins.serial = k.serial
		)
		SELECT ins.id FROM ins
		JOIN unnest($2::bigint[], $3::int[], $4::bigint[]) WITH ORDINALITY AS o(series_id, fy, serial, n)
			ON o.series_id = ins.series_id AND o.fy = ins.fy AND o.serial = ins.serial
		ORDER BY o.n`,
		w.sellerIDs, w.seriesIDs, w.fys, w.serials, w.numbers, w.dates, w.issuedAt, w.publicIDs, w.bGSTIN, w.bName, w.pos, w.origNum, w.origDate, w.items,
		w.taxable, w.cgst, w.sgst, w.igst, w.total,
		w.kSeller, w.kSeries, w.kFY, w.kSerial, w.keys, w.keyHashes, w.origExt).Query(func(rows pgx.Rows) error {
		i := 0
		for rows.Next() {
			if i == len(w.all) {
				return fmt.Errorf("invoice: more ids than invoices")
			}
			if err := rows.Scan(&w.all[i].ID); err != nil {
				return err
			}
			i++
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if i != len(w.all) {
			return fmt.Errorf("invoice: %d ids for %d invoices", i, len(w.all))
		}
		return nil
	})
	b.Queue(`
		INSERT INTO chain_records (series_id, fy, position, kind, serial, recorded_at, hash)
		SELECT u.series_id, u.fy, u.position, 'issue', u.serial, u.at, u.hash
		FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::bigint[], $5::timestamptz[], $6::bytea[])
			AS u(series_id, fy, position, serial, at, hash)`,
		w.cSeries, w.cFY, w.cPositions, w.cSerials, w.cAt, w.cHashes)
}

// sendWrites sends b on tx, with COMMIT appended when commit is set, and
// reports whether it committed. A statement's error means nothing was
// committed. Once COMMIT has answered, the transaction is durable whatever
// fails after (reading the end of the pipeline, the connection): sendWrites
// then reports it committed. A lost session before that answer, after
// COMMIT was sent, is ErrOutcomeUnknown: the server may have committed.
func sendWrites(ctx context.Context, tx pgx.Tx, b *pgx.Batch, commit bool) (bool, error) {
	committed := false
	if commit {
		b.Queue("COMMIT").Exec(func(tag pgconn.CommandTag) error {
			if tag.String() == "ROLLBACK" {
				return pgx.ErrTxCommitRollback
			}
			committed = true
			return nil
		})
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		var pg *pgconn.PgError
		switch {
		case committed:
			return true, nil
		case errors.As(err, &pg) && pg.Code == pgerrcode.UniqueViolation && pg.TableName == "idempotency_keys":
			return false, apperr.WithCause(ErrKeyRace, err)
		case commit && sessionLost(err) && !errors.Is(err, pgx.ErrTxCommitRollback):
			// A statement error aborts the pipeline before COMMIT runs; a
			// lost connection or a terminated backend may come after the
			// server committed.
			return false, apperr.WithCause(ErrOutcomeUnknown, err)
		}
		return false, translate(err, "insert invoices")
	}
	return commit, nil
}

// sessionLost reports whether err ended the database session rather than
// one statement: no answer from the server, or an error of severity FATAL
// or PANIC (a terminated backend, a server shutting down). The severity is
// read unlocalized: a server with lc_messages in another language
// translates Severity ("ВАЖНО" for FATAL), not SeverityUnlocalized, which
// servers before 9.6 do not send.
func sessionLost(err error) bool {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		return true
	}
	sev := pg.SeverityUnlocalized
	if sev == "" {
		sev = pg.Severity
	}
	return sev == "FATAL" || sev == "PANIC"
}

// commitFailed returns the error of a COMMIT that failed with err. Only a
// definite rollback (the server answered ROLLBACK, or an ERROR such as a
// deferred constraint or a serialization failure, which ends the
// transaction without committing it) is translated as such; anything else
// (a lost connection, a FATAL or PANIC, a deadline while waiting for the
// answer) came after COMMIT was sent, and the server may have committed:
// ErrOutcomeUnknown.
func commitFailed(err error) error {
	if errors.Is(err, pgx.ErrTxCommitRollback) || !sessionLost(err) {
		return translate(err, "commit")
	}
	return apperr.WithCause(ErrOutcomeUnknown, err)
}

// Issue numbers and stores one draft in its own transaction and returns it.
// See IssueTx for the errors.
func Issue(ctx context.Context, db Beginner, seller series.Seller, s series.Series, d Draft, now time.Time, opt series.Options) (Invoice, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return Invoice{}, translate(err, "begin")
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	invs, err := IssueTx(ctx, tx, seller, s, []Draft{d}, now, opt)
	if err != nil {
		return Invoice{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Invoice{}, commitFailed(err)
	}
	return invs[0], nil
}

// ClaimKey looks up an Idempotency-Key inside tx before a request is served.
// It returns the id of the invoice the key already answered for when
// requestHash matches (the caller replays it), 0 when the key is new (the
// caller proceeds and records it with IssueTx; a transaction-scoped
// advisory lock keeps a concurrent request with the same key out until tx
// ends), ErrKeyInProgress when another transaction holds the key, and
// ErrKeyReused when the key answered a different request.
func ClaimKey(ctx context.Context, tx pgx.Tx, sellerID int64, key string, requestHash []byte) (int64, error) {
	out, err := ClaimKeys(ctx, tx, []KeyClaim{{SellerID: sellerID, Key: key, RequestHash: requestHash}})
	if err != nil {
		return 0, err
	}
	return out[0].InvoiceID, out[0].Err
}

// PurgeKeys deletes idempotency keys recorded before cutoff, at most batch
// of them per statement (each statement its own short transaction, so a
// large backlog never holds many row locks, a long snapshot or a big WAL
// burst at once), until none is left; batch below 1 means 1000. It
// returns how many it deleted, also when it fails part way (ctx ended or
// the database failed).
func PurgeKeys(ctx context.Context, db series.DB, cutoff time.Time, batch int) (int64, error) {
	if batch < 1 {
		batch = 1000
	}
	var total int64
	for {
		tag, err := db.Exec(ctx, `DELETE FROM idempotency_keys WHERE (seller_id, key) IN (
			SELECT seller_id, key FROM idempotency_keys WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, batch)
		if err != nil {
			return total, translate(err, "purge idempotency keys")
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}

const invoiceCols = `i.id, i.public_id, i.seller_id, i.series_id, s.code, s.doc_type, i.fy, i.serial, i.number,
	i.invoice_date, i.issued_at, i.status, i.buyer_gstin, i.buyer_name, i.place_of_supply,
	i.original_number, i.original_date, i.items, i.taxable, i.cgst, i.sgst, i.igst, i.total,
	i.cancelled_at, i.cancel_reason, i.original_external_reason`

const invoiceFrom = ` FROM invoices i JOIN series s ON s.id = i.series_id `

func scanInvoice(row pgx.Row) (Invoice, error) {
	var inv Invoice
	var dt string
	var fy int
	var bg, bn, on, reason, oext *string
	var od *time.Time
	var items []byte
	var taxable, cgst, sgst, igst, total decimal.Decimal
	err := row.Scan(&inv.ID, &inv.PublicID, &inv.SellerID, &inv.SeriesID, &inv.SeriesCode, &dt, &fy, &inv.Serial, &inv.Number,
		&inv.InvoiceDate, &inv.IssuedAt, &inv.Status, &bg, &bn, &inv.PlaceOfSupply,
		&on, &od, &items, &taxable, &cgst, &sgst, &igst, &total, &inv.CancelledAt, &reason, &oext)
	if err != nil {
		return Invoice{}, err
	}
	inv.DocType, inv.FY = series.DocType(dt), series.FY(fy)
	if bg != nil || bn != nil {
		inv.Buyer = &Buyer{GSTIN: deref(bg), Name: deref(bn)}
	}
	if on != nil && od != nil {
		inv.Original = &Original{Number: *on, InvoiceDate: *od, ExternalReason: deref(oext)}
	}
	inv.Totals = Totals{Taxable: taxable, CGST: cgst, SGST: sgst, IGST: igst, Total: total}
	inv.CancelReason = deref(reason)
	if err := json.Unmarshal(items, &inv.Items); err != nil {
		return Invoice{}, fmt.Errorf("invoice %d: stored items: %w", inv.ID, err)
	}
	return inv, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func one(row pgx.Row, what string) (Invoice, error) {
	inv, err := scanInvoice(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return Invoice{}, ErrNotFound
	}
	if err != nil {
		return Invoice{}, translate(err, what)
	}
	return inv, nil
}

// Get returns the seller's invoice with id, or ErrNotFound (also when it
// belongs to another seller).
func Get(ctx context.Context, db series.DB, sellerID, id int64) (Invoice, error) {
	return one(db.QueryRow(ctx, `SELECT `+invoiceCols+invoiceFrom+`WHERE i.id = $1 AND i.seller_id = $2`, id, sellerID), "get invoice")
}

// IDBySerial returns the internal id of the seller's invoice with serial
// in series seriesID and year fy, or ErrNotFound (also when the series is
// another seller's). It fails otherwise only on a database error.
func IDBySerial(ctx context.Context, db series.DB, sellerID, seriesID int64, fy series.FY, serial int64) (int64, error) {
	var id int64
	err := db.QueryRow(ctx, `SELECT id FROM invoices WHERE series_id = $1 AND fy = $2 AND serial = $3 AND seller_id = $4`,
		seriesID, int(fy), serial, sellerID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, translate(err, "find invoice")
	}
	return id, nil
}

// GetByPublicID returns the invoice whose public id is publicID, or
// ErrNotFound.
func GetByPublicID(ctx context.Context, db series.DB, publicID string) (Invoice, error) {
	return one(db.QueryRow(ctx, `SELECT `+invoiceCols+invoiceFrom+`WHERE i.public_id = $1`, publicID), "get invoice")
}

// List returns up to limit invoices of series s in fy with serials above
// after, in serial order.
func List(ctx context.Context, db series.DB, s series.Series, fy series.FY, after int64, limit int) ([]Invoice, error) {
	return ListDated(ctx, db, s, fy, DateRange{}, after, limit)
}

// DateRange bounds invoice dates, both ends included; a zero end is open.
type DateRange struct {
	From, To time.Time // civil dates (midnight UTC, as series.DateIST gives)
}

// ListDated is List restricted to invoices dated within r. Within a
// series-year invoice dates never decrease with the serial, so the
// matching invoices are consecutive serials. It fails only on a database
// error.
func ListDated(ctx context.Context, db series.DB, s series.Series, fy series.FY, r DateRange, after int64, limit int) ([]Invoice, error) {
	var from, to *string
	if !r.From.IsZero() {
		v := r.From.Format(time.DateOnly)
		from = &v
	}
	if !r.To.IsZero() {
		v := r.To.Format(time.DateOnly)
		to = &v
	}
	rows, err := db.Query(ctx, `SELECT `+invoiceCols+invoiceFrom+`
		WHERE i.series_id = $1 AND i.fy = $2 AND i.serial > $3
		  AND ($5::date IS NULL OR i.invoice_date >= $5::date)
		  AND ($6::date IS NULL OR i.invoice_date <= $6::date)
		ORDER BY i.serial LIMIT $4`, s.ID, int(fy), after, limit, from, to)
	if err != nil {
		return nil, translate(err, "list invoices")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Invoice, error) { return scanInvoice(r) })
	if err != nil {
		return nil, translate(err, "list invoices")
	}
	return out, nil
}

// CheckOriginal checks the original that draft d (a note) names: unless it
// is declared external, the seller must have issued here an invoice, bill
// of supply or revised invoice with that number and date, or declared it
// as issued before invoiced (an opening whose serials include the number,
// dated no later than the opening's last date). Invoices are
// never deleted, so a check before issuing stays true. It returns nil for a
// draft without an original, ErrOriginalNotFound, ErrInvalid when the
// number names a note or a voucher, and database errors.
func CheckOriginal(ctx context.Context, db series.DB, seller series.Seller, d *Draft) error {
	o := d.Original
	if o == nil || o.ExternalReason != "" {
		return nil
	}
	var dt string
	err := db.QueryRow(ctx, `
		SELECT s.doc_type FROM invoices i JOIN series s ON s.id = i.series_id
		WHERE i.seller_id = $1 AND i.fy = $2 AND i.number = $3 AND i.invoice_date = $4`,
		seller.ID, int(series.FYOf(o.InvoiceDate)), o.Number, o.InvoiceDate).Scan(&dt)
	if errors.Is(err, pgx.ErrNoRows) {
		declared, derr := declaredOriginal(ctx, db, seller, o)
		if derr != nil || declared {
			return derr
		}
		return apperr.Errorf(ErrOriginalNotFound, "original %s dated %s was not issued by %s here; if it was issued elsewhere or before the move to invoiced, send \"external\": true with a \"reason\"",
			o.Number, o.InvoiceDate.Format(time.DateOnly), seller.GSTIN)
	}
	if err != nil {
		return translate(err, "find original")
	}
	switch series.DocType(dt) {
	case series.Invoice, series.BillOfSupply, series.RevisedInvoice, series.InwardSupplyUnregistered:
		return nil
	}
	return apperr.Errorf(ErrInvalid, "original %s is a %s; a note corrects an invoice", o.Number, dt)
}

// FindByNumber returns the seller's invoices whose number is number,
// compared case-insensitively (as the IRP compares document numbers):
// none, one, or, for a format without {FY}, one per financial year,
// newest year first. It fails only on a database error.
func FindByNumber(ctx context.Context, db series.DB, sellerID int64, number string) ([]Invoice, error) {
	// Numbers are stored upper-case (formats are), and unique per seller
	// and year: one index probe per year the seller has used.
	rows, err := db.Query(ctx, `SELECT `+invoiceCols+invoiceFrom+`
		WHERE i.seller_id = $1 AND i.number = upper($2)
		  AND i.fy IN (SELECT DISTINCT c.fy FROM series_counters c WHERE c.seller_id = $1)
		ORDER BY i.fy DESC`, sellerID, number)
	if err != nil {
		return nil, translate(err, "find invoice by number")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Invoice, error) { return scanInvoice(r) })
	if err != nil {
		return nil, translate(err, "find invoice by number")
	}
	return out, nil
}

// Cancel cancels an invoice in its own transaction; see CancelTx. It also
// returns ErrOutcomeUnknown when the COMMIT's answer was lost.
func Cancel(ctx context.Context, db Beginner, seller series.Seller, id int64, reason string, now time.Time, opt series.Options) (Invoice, error) {
	inv, _, err := CancelOnce(ctx, db, seller, CancelRequest{ID: id, Reason: reason}, now, opt)
	return inv, err
}

// CancelRequest is a cancellation as asked for: the invoice, the reason
// and, optionally, the request's Idempotency-Key with the fingerprint of
// the request (see Draft).
type CancelRequest struct {
	ID             int64
	Reason         string
	IdempotencyKey string
	RequestHash    []byte
}

// CancelOnce cancels the seller's invoice req.ID in its own transaction
// (see CancelTx) and returns it. With an idempotency key, the key is
// claimed first and recorded with the cancellation in the same
// transaction: a key that already answered an identical request returns
// that invoice as it is now with replayed set (the answer of a cancel is
// final: a cancelled invoice never changes again), a key held by another
// transaction ErrKeyInProgress, a key used for another request
// ErrKeyReused. Other errors are CancelTx's, and ErrOutcomeUnknown when
// the COMMIT's answer was lost.
func CancelOnce(ctx context.Context, db Beginner, seller series.Seller, req CancelRequest, now time.Time, opt series.Options) (inv Invoice, replayed bool, err error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return Invoice{}, false, translate(err, "begin")
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if req.IdempotencyKey != "" {
		id, err := ClaimKey(ctx, tx, seller.ID, req.IdempotencyKey, req.RequestHash)
		if err != nil {
			return Invoice{}, false, err
		}
		if id != 0 {
			inv, err := Get(ctx, tx, seller.ID, id)
			return inv, err == nil, err
		}
	}
	if inv, err = CancelTx(ctx, tx, seller, req.ID, req.Reason, now, opt); err != nil {
		return Invoice{}, false, err
	}
	if req.IdempotencyKey != "" {
		if _, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (seller_id, key, request_hash, invoice_id) VALUES ($1, $2, $3, $4)`,
			seller.ID, req.IdempotencyKey, req.RequestHash, inv.ID); err != nil {
			return Invoice{}, false, translate(err, "record idempotency key")
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return Invoice{}, false, commitFailed(err)
	}
	return inv, false, nil
}

// CancelTx marks the seller's invoice id cancelled with reason and appends a
// cancellation record to its series-year's chain, under the counter lock.
// The number stays used; nothing is deleted. It returns ErrInvalid for an
// empty or overlong reason, ErrNotFound, ErrAlreadyCancelled,
// ErrPeriodLocked when the invoice's month is locked, and
// series.ErrLockTimeout when the invoice row or the counter stays locked
// past opt.LockTimeout.
func CancelTx(ctx context.Context, tx pgx.Tx, seller series.Seller, id int64, reason string, now time.Time, opt series.Options) (Invoice, error) {
	if err := checkText("reason", reason, false); err != nil {
		return Invoice{}, err
	}
	var inv Invoice
	lock := &pgx.Batch{}
	series.QueueLockTimeout(lock, opt)
	lock.Queue(`SELECT `+invoiceCols+invoiceFrom+`WHERE i.id = $1 AND i.seller_id = $2 FOR UPDATE OF i`, id, seller.ID).
		QueryRow(func(row pgx.Row) (err error) { inv, err = scanInvoice(row); return err })
	series.QueueLockTimeoutRestore(lock, opt)
	if err := tx.SendBatch(ctx, lock).Close(); errors.Is(err, pgx.ErrNoRows) {
		return Invoice{}, ErrNotFound
	} else if err != nil {
		return Invoice{}, translate(err, "lock invoice")
	}
	if inv.Status == StatusCancelled {
		return Invoice{}, apperr.Errorf(ErrAlreadyCancelled, "invoice %s was already cancelled", inv.Number)
	}
	length, head, err := series.LockChain(ctx, tx, inv.SeriesID, inv.FY, opt)
	if err != nil {
		return Invoice{}, err
	}
	if err := checkPeriodTx(ctx, tx, inv, now); err != nil {
		return Invoice{}, err
	}
	at := now.UTC().Truncate(time.Microsecond)
	inv.Status, inv.CancelledAt, inv.CancelReason = StatusCancelled, &at, reason
	rec := CancelRecord(string(seller.GSTIN), inv, length+1, head)
	hash := rec.Hash()
	batch := &pgx.Batch{}
	batch.Queue(`UPDATE invoices SET status = 'cancelled', cancelled_at = $2, cancel_reason = $3 WHERE id = $1`, id, at, reason)
	batch.Queue(`INSERT INTO chain_records (series_id, fy, position, kind, serial, recorded_at, hash) VALUES ($1, $2, $3, 'cancel', $4, $5, $6)`,
		inv.SeriesID, int(inv.FY), length+1, inv.Serial, at, hash)
	series.QueueAdvanceChains(batch, []int64{inv.SeriesID}, []int32{int32(inv.FY)}, []int64{length + 1}, [][]byte{hash})
	queueCancelledEvent(batch, seller.ID, id, at)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return Invoice{}, translate(err, "cancel invoice")
	}
	return inv, nil
}

func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	var pg *pgconn.PgError
	switch {
	case errors.As(err, &pg) && pg.Code == pgerrcode.LockNotAvailable:
		return apperr.WithCause(series.ErrLockTimeout, err)
	case series.IsMoved(err):
		return apperr.WithCause(series.ErrMoved, err)
	case series.IsLeased(err):
		return apperr.WithCause(series.ErrLeased, err)
	}
	return fmt.Errorf("invoice: %s: %w", what, err)
}

// KeyClaim is one idempotency key of a seller to claim.
type KeyClaim struct {
	SellerID    int64
	Key         string
	RequestHash []byte
}

// KeyOutcome is what ClaimKeys found for one key: InvoiceID of the invoice
// to replay, 0 for a fresh key (now held by tx), or Err (ErrKeyInProgress,
// ErrKeyReused).
type KeyOutcome struct {
	InvoiceID int64
	Err       error
}

// ClaimKeys claims several distinct (seller, key) pairs in one round trip
// of two statements, whatever their number; see ClaimKey. It returns one
// outcome per claim, in order, and an error only when the database fails.
func ClaimKeys(ctx context.Context, tx pgx.Tx, claims []KeyClaim) ([]KeyOutcome, error) {
	out, _, err := claimKeys(ctx, tx, claims)
	return out, err
}

// claimKeys is ClaimKeys that also returns the database's clock, read
// after the keys' locks were taken.
func claimKeys(ctx context.Context, tx pgx.Tx, claims []KeyClaim) ([]KeyOutcome, time.Time, error) {
	out := make([]KeyOutcome, len(claims))
	var dbNow time.Time
	lockKeys := lockNames(claims)
	sellers, keys := make([]int64, len(claims)), make([]string, len(claims))
	for i, c := range claims {
		sellers[i], keys[i] = c.SellerID, c.Key
	}
	locked := make([]bool, 0, len(claims))
	type stored struct {
		hash []byte
		id   int64
	}
	type sellerKey struct {
		seller int64
		key    string
	}
	found := map[sellerKey]stored{}
	batch := &pgx.Batch{}
	batch.Queue(`SELECT pg_try_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest($1::text[]) WITH ORDINALITY AS u(k, n) ORDER BY n`,
		lockKeys).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var ok bool
			if err := rows.Scan(&ok); err != nil {
				return err
			}
			locked = append(locked, ok)
		}
		return rows.Err()
	})
	// A separate statement, so its snapshot is taken after the locks.
	batch.Queue(`SELECT i.seller_id, i.key, i.request_hash, i.invoice_id
		FROM idempotency_keys i JOIN unnest($1::bigint[], $2::text[]) AS u(seller_id, key)
		ON i.seller_id = u.seller_id AND i.key = u.key`, sellers, keys).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var k sellerKey
				var st stored
				if err := rows.Scan(&k.seller, &k.key, &st.hash, &st.id); err != nil {
					return err
				}
				found[k] = st
			}
			return rows.Err()
		})
	batch.Queue(`SELECT clock_timestamp()`).QueryRow(func(row pgx.Row) error { return row.Scan(&dbNow) })
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return nil, time.Time{}, translate(err, "claim idempotency keys")
	}
	if len(locked) != len(claims) {
		return nil, time.Time{}, fmt.Errorf("invoice: claim idempotency keys: %d locks for %d keys", len(locked), len(claims))
	}
	for i, c := range claims {
		st, ok := found[sellerKey{c.SellerID, c.Key}]
		switch {
		case !locked[i]:
			out[i].Err = ErrKeyInProgress
		case !ok:
		case !bytes.Equal(st.hash, c.RequestHash):
			out[i].Err = ErrKeyReused
		default:
			out[i].InvoiceID = st.id
		}
	}
	return out, dbNow, nil
}
