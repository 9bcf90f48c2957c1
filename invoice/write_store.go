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

// invoiceColumns returns rows as one array per column of table invoices,
// in the order of the invoice insert (writes.queue, $1 to $22) and of
// invoiced_issue_rows_v2's invoice arguments.
func invoiceColumns(rows []invoiceRow) []any {
	n := len(rows)
	sellers, seriesIDs, serials := make([]int64, n), make([]int64, n), make([]int64, n)
	fys := make([]int32, n)
	dates, issuedAt := make([]time.Time, n), make([]time.Time, n)
	numbers, publicIDs, pos, items := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	buyerGSTINs, buyerNames, origNumbers, origExternal := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	origDates, buyerAddresses, shipTos := make([]*time.Time, n), make([]*string, n), make([]*string, n)
	taxable, cgst, sgst, igst, total := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, r := range rows {
		sellers[i], seriesIDs[i], fys[i], serials[i] = r.sellerID, r.seriesID, r.fy, r.serial
		numbers[i], dates[i], issuedAt[i], publicIDs[i] = r.number, r.date, r.issuedAt, r.publicID
		buyerGSTINs[i], buyerNames[i], pos[i] = r.buyerGSTIN, r.buyerName, r.placeOfSupply
		origNumbers[i], origDates[i], origExternal[i], items[i] = r.originalNumber, r.originalDate, r.originalExternal, r.items
		taxable[i], cgst[i], sgst[i], igst[i], total[i] = r.taxable, r.cgst, r.sgst, r.igst, r.total
		buyerAddresses[i], shipTos[i] = r.buyerAddress, r.shipTo
	}
	return []any{sellers, seriesIDs, fys, serials, numbers, dates, issuedAt, publicIDs, buyerGSTINs, buyerNames, pos,
		origNumbers, origDates, items, taxable, cgst, sgst, igst, total, origExternal, buyerAddresses, shipTos}
}

// keyColumns returns rows as the parameters $23 to $28 of the invoice
// insert (writes.queue).
func keyColumns(rows []keyRow) []any {
	n := len(rows)
	sellers, seriesIDs, serials := make([]int64, n), make([]int64, n), make([]int64, n)
	fys := make([]int32, n)
	keys, hashes := make([]string, n), make([][]byte, n)
	for i, r := range rows {
		sellers[i], seriesIDs[i], fys[i], serials[i], keys[i], hashes[i] = r.sellerID, r.seriesID, r.fy, r.serial, r.key, r.requestHash
	}
	return []any{sellers, seriesIDs, fys, serials, keys, hashes}
}

// chainColumns returns rows as the parameters of the chain records' insert.
func chainColumns(rows []chainRow) []any {
	n := len(rows)
	sellers, seriesIDs, positions, serials := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	fys := make([]int32, n)
	ats, hashes := make([]time.Time, n), make([][]byte, n)
	for i, r := range rows {
		sellers[i], seriesIDs[i], fys[i], positions[i], serials[i], ats[i], hashes[i] = r.sellerID, r.seriesID, r.fy, r.position, r.serial, r.at, r.hash
	}
	return []any{seriesIDs, fys, positions, serials, ats, hashes, sellers}
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
	args := append(invoiceColumns(w.invoices), keyColumns(w.keys)...)
	b.Queue(`
		WITH ins AS (
			INSERT INTO invoices (seller_id, series_id, fy, serial, number, invoice_date, issued_at, public_id,
				buyer_gstin, buyer_name, place_of_supply, original_number, original_date, items,
				taxable, cgst, sgst, igst, total, original_external_reason, buyer_address, ship_to)
			SELECT u.seller_id, u.series_id, u.fy, u.serial, u.number, u.d, u.at, u.public_id,
				u.bg, u.bn, u.pos, u.onum, u.odate, u.items::jsonb,
				u.taxable::numeric, u.cgst::numeric, u.sgst::numeric, u.igst::numeric, u.total::numeric, u.oext,
				u.baddr::jsonb, u.ship::jsonb
			FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::bigint[], $5::text[], $6::date[], $7::timestamptz[],
				$8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::date[], $14::text[],
				$15::text[], $16::text[], $17::text[], $18::text[], $19::text[], $20::text[], $21::text[], $22::text[])
				AS u(seller_id, series_id, fy, serial, number, d, at, public_id, bg, bn, pos, onum, odate, items,
				taxable, cgst, sgst, igst, total, oext, baddr, ship)
			RETURNING id, seller_id, series_id, fy, serial, issued_at
		), `+issuedEventsSQL+`, keys AS (
			INSERT INTO idempotency_keys (seller_id, key, request_hash, invoice_id)
			SELECT k.seller_id, k.key, k.hash, ins.id
			FROM unnest($23::bigint[], $24::bigint[], $25::int[], $26::bigint[], $27::text[], $28::bytea[])
				AS k(seller_id, series_id, fy, serial, key, hash)
			JOIN ins ON ins.series_id = k.series_id AND ins.fy = k.fy AND ins.serial = k.serial
		)
		SELECT ins.id FROM ins
		JOIN unnest($2::bigint[], $3::int[], $4::bigint[]) WITH ORDINALITY AS o(series_id, fy, serial, n)
			ON o.series_id = ins.series_id AND o.fy = ins.fy AND o.serial = ins.serial
		ORDER BY o.n`, args...).Query(func(rows pgx.Rows) error {
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
		INSERT INTO chain_records (series_id, fy, position, kind, serial, recorded_at, hash, seller_id)
		SELECT u.series_id, u.fy, u.position, 'issue', u.serial, u.at, u.hash, u.seller_id
		FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::bigint[], $5::timestamptz[], $6::bytea[], $7::bigint[])
			AS u(series_id, fy, position, serial, at, hash, seller_id)`, chainColumns(w.chain)...)
}

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
