package invoice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// This file holds the write path of issuing: the rows one transaction
// inserts (invoices, chain records, idempotency keys, chain heads), one
// struct per table's row, sent as one multi-row insert per table.

// sealGroups checks groups and returns each draft's sealed parts (worked
// out before the lock) and each group's take.
func sealGroups(groups []Group) ([][]*document.Sealed, []series.Take, error) {
	takes := make([]series.Take, len(groups))
	seals := make([][]*document.Sealed, len(groups))
	for g, gr := range groups {
		if len(gr.Drafts) == 0 {
			return nil, nil, fmt.Errorf("invoice: IssueManyTx: group %d has no drafts", g)
		}
		date := gr.Drafts[0].InvoiceDate
		seals[g] = make([]*document.Sealed, len(gr.Drafts))
		for i := range gr.Drafts {
			d := &gr.Drafts[i]
			if !d.InvoiceDate.Equal(date) {
				return nil, nil, fmt.Errorf("invoice: drafts of one group must share an invoice date")
			}
			// The items' JSON, the totals as text and the content part of
			// the chain record (document.Prepare did it already).
			var err error
			if seals[g][i], err = d.Seal(); err != nil {
				return nil, nil, err
			}
		}
		takes[g] = series.Take{Series: gr.Series, Date: date, N: len(gr.Drafts)}
	}
	return seals, takes, nil
}

// writes is what one transaction inserts: the invoices numbered (out, by
// group, and all of them in order), each group's counter state after
// (states), and the rows of each table.
type writes struct {
	out      [][]document.Invoice
	states   []*series.State
	all      []*document.Invoice
	invoices []invoiceRow
	chain    []chainRow
	keys     []keyRow
	heads    []headRow
}

// invoiceRow is the row of an invoice in table invoices (less its id,
// which the insert returns). Nil pointers are NULL.
type invoiceRow struct {
	sellerID, seriesID int64
	fy                 int32
	serial             int64
	number             string
	date, issuedAt     time.Time
	publicID           string
	buyerGSTIN         *string
	buyerName          *string
	placeOfSupply      string
	originalNumber     *string
	originalDate       *time.Time
	items              string // JSON
	taxable, cgst      string // decimal text, cast to numeric by the insert
	sgst, igst, total  string
	originalExternal   *string
	buyerAddress       *string // JSON
	shipTo             *string // JSON
}

// chainRow is the record of an issue in table chain_records.
type chainRow struct {
	sellerID int64
	seriesID int64
	fy       int32
	position int64
	serial   int64
	at       time.Time
	hash     []byte
}

// keyRow is an idempotency key in table idempotency_keys, naming its
// invoice by series, year and serial until the insert knows its id.
type keyRow struct {
	sellerID, seriesID int64
	fy                 int32
	serial             int64
	key                string
	requestHash        []byte
}

// headRow is a series-year's chain state after the transaction's records,
// for series.QueueAdvanceChains.
type headRow struct {
	sellerID int64
	seriesID int64
	fy       int32
	length   int64
	head     []byte
}

// numberGroups numbers and chains the drafts of every group not refused
// (errs) with its block and returns the rows to write.
func numberGroups(groups []Group, blocks []series.Block, errs []error, seals [][]*document.Sealed) *writes {
	w := &writes{out: make([][]document.Invoice, len(groups)), states: make([]*series.State, len(groups))}
	for g, gr := range groups {
		if errs[g] != nil {
			continue
		}
		b := blocks[g]
		invs := make([]document.Invoice, b.N)
		w.out[g] = invs
		head := b.ChainHead
		for i, d := range gr.Drafts[:b.N] {
			inv := &invs[i]
			*inv = document.Invoice{
				PublicID: document.NewPublicID(gr.Seller.ID, b.IssuedAt), SellerID: gr.Seller.ID, SeriesID: gr.Series.ID, SeriesCode: gr.Series.Code,
				DocType: gr.Series.DocType, FY: b.FY, Serial: b.Serial(i), Number: b.Number(i),
				InvoiceDate: d.InvoiceDate, IssuedAt: b.IssuedAt, Status: document.StatusIssued, Buyer: d.Buyer, ShipTo: d.ShipTo,
				PlaceOfSupply: d.PlaceOfSupply, Original: d.Original, Items: d.Items, Totals: d.Totals,
			}
			w.all = append(w.all, inv)
			position := b.ChainLength + int64(i) + 1
			sl := seals[g][i]
			head = document.IssueHash(string(gr.Seller.GSTIN), inv, position, head, sl.Content)

			w.invoices = append(w.invoices, invoiceRowOf(inv, sl))
			w.chain = append(w.chain, chainRow{sellerID: inv.SellerID, seriesID: inv.SeriesID, fy: int32(inv.FY), position: position,
				serial: inv.Serial, at: inv.IssuedAt, hash: head})
			if d.IdempotencyKey != "" {
				w.keys = append(w.keys, keyRow{sellerID: inv.SellerID, seriesID: inv.SeriesID, fy: int32(inv.FY),
					serial: inv.Serial, key: d.IdempotencyKey, requestHash: d.RequestHash})
			}
		}
		length := b.ChainLength + int64(b.N)
		w.heads = append(w.heads, headRow{sellerID: gr.Seller.ID, seriesID: gr.Series.ID, fy: int32(b.FY), length: length, head: head})
		st := b.After(gr.Drafts[0].InvoiceDate, length, head)
		w.states[g] = &st
	}
	return w
}

// invoiceRowOf returns the row of inv, with the parts sl sealed.
func invoiceRowOf(inv *document.Invoice, sl *document.Sealed) invoiceRow {
	r := invoiceRow{sellerID: inv.SellerID, seriesID: inv.SeriesID, fy: int32(inv.FY), serial: inv.Serial,
		number: inv.Number, date: inv.InvoiceDate, issuedAt: inv.IssuedAt, publicID: inv.PublicID,
		placeOfSupply: inv.PlaceOfSupply, items: sl.ItemsJSON,
		taxable: sl.Money[0], cgst: sl.Money[1], sgst: sl.Money[2], igst: sl.Money[3], total: sl.Money[4]}
	if inv.Buyer != nil {
		if inv.Buyer.GSTIN != "" {
			r.buyerGSTIN = &inv.Buyer.GSTIN
		}
		if inv.Buyer.Name != "" {
			r.buyerName = &inv.Buyer.Name
		}
	}
	if inv.Original != nil {
		r.originalNumber, r.originalDate = &inv.Original.Number, &inv.Original.InvoiceDate
		if inv.Original.ExternalReason != "" {
			r.originalExternal = &inv.Original.ExternalReason
		}
	}
	r.buyerAddress, r.shipTo = sl.BuyerAddress, sl.ShipTo
	return r
}

// queueHeads queues on b the update of every series-year's chain state to
// the heads w's records leave.
func (w *writes) queueHeads(b *pgx.Batch) {
	n := len(w.heads)
	sellers, seriesIDs, lengths := make([]int64, n), make([]int64, n), make([]int64, n)
	fys := make([]int32, n)
	heads := make([][]byte, n)
	for i, h := range w.heads {
		sellers[i], seriesIDs[i], fys[i], lengths[i], heads[i] = h.sellerID, h.seriesID, h.fy, h.length, h.head
	}
	series.QueueAdvanceChains(b, sellers, seriesIDs, fys, lengths, heads)
}

// queue queues on b the statements inserting w: one inserts the invoices
// and their idempotency keys and returns the ids, one the chain records.
func (w *writes) queue(b *pgx.Batch) {
	args := append(arrays(invoiceTable, w.invoices), arrays(keyTable, w.keys)...)
	b.Queue(issueInsertSQL, args...).Query(func(rows pgx.Rows) error {
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
	b.Queue(chainInsertSQL, arrays(chainTable, w.chain)...)
}

// issueInsertSQL inserts the invoices (the arrays of invoiceTable's
// columns) and their idempotency keys (keyTable's, numbered after them),
// records the events of subscribed sellers, and returns the invoices' ids
// in the order of the arrays.
var issueInsertSQL = `
		WITH ins AS (
			` + insertUnnestSQL("invoices", invoiceTable, 1) + `
			RETURNING id, seller_id, series_id, fy, serial, issued_at
		), ` + issuedEventsSQL + `, keys AS (
			INSERT INTO idempotency_keys (seller_id, key, request_hash, invoice_id)
			SELECT k.seller_id, k.key, k.hash, ins.id
			FROM ` + unnestOf(keyTable, len(sent(invoiceTable))+1, "k") + `
			JOIN ins ON ins.series_id = k.series_id AND ins.fy = k.fy AND ins.serial = k.serial
		)
		SELECT ins.id FROM ins
		JOIN unnest(` + paramOf(invoiceTable, 1, "series_id") + `::bigint[], ` + paramOf(invoiceTable, 1, "fy") + `::int[], ` +
	paramOf(invoiceTable, 1, "serial") + `::bigint[]) WITH ORDINALITY AS o(series_id, fy, serial, n)
			ON o.series_id = ins.series_id AND o.fy = ins.fy AND o.serial = ins.serial
		ORDER BY o.n`

// chainInsertSQL inserts the issue records of the arrays of chainTable's
// columns.
var chainInsertSQL = insertUnnestSQL("chain_records", chainTable, 1)

// sendWrites sends b on tx, with COMMIT appended when commit is set. Once
// COMMIT has answered, the transaction is durable whatever fails after
// (reading the end of the pipeline, the connection): sendWrites then
// returns nil, and a pipeTx is marked committed. Before that answer, with
// COMMIT queued, only the server's refusal of a statement (a PostgreSQL
// error that does not end the session: the COMMIT then rolls back), a
// COMMIT answered ROLLBACK, or a failure before anything was sent means
// nothing was committed; any other error (a lost session, a result
// callback that failed while the server went on to run the COMMIT it was
// sent, whatever that error wraps) is ErrOutcomeUnknown: the server may
// have committed.
func sendWrites(ctx context.Context, tx pgx.Tx, b *pgx.Batch, commit bool) error {
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
	err := tx.SendBatch(ctx, b).Close()
	if committed {
		if p, ok := tx.(*pipeTx); ok {
			p.committed()
		}
	}
	if err != nil {
		switch {
		case committed:
			return nil
		case keyTaken(err):
			return apperr.WithCause(ErrKeyRace, err)
		case commit && commitMayHaveRun(err):
			return apperr.WithCause(ErrOutcomeUnknown, err)
		}
		return translate(err, "insert invoices")
	}
	return nil
}

// commitMayHaveRun reports whether err, the failure of a pipeline that
// ends in COMMIT before COMMIT's answer was read, leaves open that the
// server committed: it is not the server's refusal of a statement (which
// aborts the transaction, so its COMMIT rolls back), not a COMMIT answered
// ROLLBACK, and not a failure before anything was sent.
func commitMayHaveRun(err error) bool {
	var pg *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrTxCommitRollback), pgconn.SafeToRetry(err):
		return false
	case errors.As(err, &pg):
		return db.ClassifyCommit(pg) == db.OutcomeUnknown // FATAL, PANIC: the session ended
	}
	return true
}

// keyTaken reports whether err is the idempotency keys' unique index
// refusing a key another transaction recorded first (ErrKeyRace).
func keyTaken(err error) bool {
	v, _ := db.Violated(err)
	return v.Code == pgerrcode.UniqueViolation && v.Constraint == "idempotency_keys_pkey"
}
