package reports

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
)

// This file holds the package's SQL; database errors are translated where
// they arise.
//
// Every statement names its seller: each table it reads, on either side of
// a join and inside a LATERAL subquery too, is filtered by seller_id
// equal to the parameter (Citus prunes shards by a constant, not through
// a join condition). On
// Citus (docs/scale-out.md), where these tables are distributed by
// seller_id and co-located, a report then runs on the seller's shard
// group alone (router execution) instead of asking every shard, or being
// refused as a join that would need repartitioning. On plain PostgreSQL
// the extra condition is one more column of the same index.

// readTx runs fn in a read transaction begun on b (db.ReadTx: one
// snapshot, plans that walk indexes whatever the statistics) and returns
// fn's error, or BEGIN's or COMMIT's translated.
func readTx(ctx context.Context, b db.OptionsBeginner, fn func(pgx.Tx) error) error {
	return db.TranslateTx(db.ReadTx(ctx, b, fn), "reports")
}

// seriesYear is one series-year to check, with its counter row when there
// is one.
type seriesYear struct {
	Series  gst.Series
	FY      gst.FY
	Counter *counterRow // nil when the counter row is missing
}

type counterRow struct {
	LastSerial  int64
	ChainLength int64
	ChainHead   []byte
}

// listSeriesYears returns the seller's series-years that have a counter
// row, an invoice or a chain record, ordered by series code and year,
// restricted to code and fy when those are set ("" and 0 mean all).
func listSeriesYears(ctx context.Context, tx pgx.Tx, sellerID int64, code string, fy gst.FY) ([]seriesYear, error) {
	all, err := series.List(ctx, tx, sellerID)
	if err != nil {
		return nil, err
	}
	byID := map[int64]gst.Series{}
	var ids []int64
	for _, su := range all {
		if code != "" && su.Code != code {
			continue
		}
		byID[su.ID] = su.Series
		ids = append(ids, su.ID)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `
		WITH y AS (
			SELECT series_id, fy FROM series_counters WHERE seller_id = $3 AND series_id = ANY($1)
			UNION SELECT DISTINCT series_id, fy FROM invoices WHERE seller_id = $3 AND series_id = ANY($1)
			UNION SELECT DISTINCT series_id, fy FROM chain_records WHERE seller_id = $3 AND series_id = ANY($1)
		)
		SELECT y.series_id, y.fy, c.series_id IS NOT NULL, coalesce(c.last_serial, 0), coalesce(c.chain_length, 0), c.chain_head
		FROM y LEFT JOIN series_counters c ON c.seller_id = $3 AND c.series_id = y.series_id AND c.fy = y.fy
		WHERE $2 = 0 OR y.fy = $2`, ids, int(fy), sellerID)
	if err != nil {
		return nil, translate(err, "list series-years")
	}
	defer rows.Close()
	var out []seriesYear
	for rows.Next() {
		var id int64
		var y int
		var has bool
		var c counterRow
		if err := rows.Scan(&id, &y, &has, &c.LastSerial, &c.ChainLength, &c.ChainHead); err != nil {
			return nil, translate(err, "list series-years")
		}
		sy := seriesYear{Series: byID[id], FY: gst.FY(y)}
		if has {
			sy.Counter = &c
		}
		out = append(out, sy)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, "list series-years")
	}
	sortSeriesYears(out)
	return out, nil
}

// counterOf reads the counter row of one series-year; nil when missing.
func counterOf(ctx context.Context, tx pgx.Tx, s gst.Series, fy gst.FY) (*counterRow, error) {
	var c counterRow
	err := tx.QueryRow(ctx, `SELECT last_serial, chain_length, chain_head FROM series_counters WHERE series_id = $1 AND fy = $2 AND seller_id = $3`,
		s.ID, int(fy), s.SellerID).Scan(&c.LastSerial, &c.ChainLength, &c.ChainHead)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, translate(err, "read counter")
	}
	return &c, nil
}

// recordRow is one chain record joined with the invoice it names (Found is
// false when that invoice row is gone).
type recordRow struct {
	Position   int64
	Kind       string
	Serial     int64
	RecordedAt time.Time
	Hash       []byte
	Found      bool
	Inv        invoiceFields
}

// invoiceFields are the invoice columns the chain and the audit read.
// Amounts are the database's text (numeric(18,2): always two decimals).
type invoiceFields struct {
	Serial                           int64
	Number                           string
	InvoiceDate                      time.Time
	IssuedAt                         time.Time
	Status                           string
	CancelReason                     string
	CancelledAt                      *time.Time
	BuyerGSTIN                       string
	Taxable, CGST, SGST, IGST, Total string
	// The rest of what the chain seals.
	BuyerName, PlaceOfSupply, OriginalNumber string
	OriginalDate                             *time.Time
	Items                                    []byte // the stored JSON
	// BuyerAddress and ShipTo are the stored JSON of the buyer's address
	// and of the address of delivery; nil when the invoice has none.
	BuyerAddress, ShipTo *string
}

// walkRecords streams the chain records of a series-year in position
// order (rows of one position repeat when duplicate serials were forced in).
//
// Each record's invoice is read by a LATERAL lookup that cannot be
// flattened into a join (OFFSET 0): one probe of the (series, year,
// serial) key per record. As a join, on tables not yet analysed after a
// burst (each side "one row"), it was planned as a nested loop that read
// the whole year's invoices again for every record: 8 million rows thrown
// away for 4,000 invoices, 57 s for 20,000.
func walkRecords(ctx context.Context, tx pgx.Tx, s gst.Series, fy gst.FY, fn func(*recordRow) error) error {
	rows, err := tx.Query(ctx, `
		SELECT c.position, c.kind, c.serial, c.recorded_at, c.hash, i.serial IS NOT NULL,
			coalesce(i.number, ''), coalesce(i.invoice_date, '0001-01-01'::date), coalesce(i.issued_at, '0001-01-01Z'::timestamptz),
			coalesce(i.status, ''), coalesce(i.cancel_reason, ''), i.cancelled_at, coalesce(i.buyer_gstin, ''),
			coalesce(i.taxable::text, ''), coalesce(i.cgst::text, ''), coalesce(i.sgst::text, ''), coalesce(i.igst::text, ''), coalesce(i.total::text, ''),
			coalesce(i.buyer_name, ''), coalesce(i.place_of_supply, ''), coalesce(i.original_number, ''), i.original_date, coalesce(i.items, '[]'::jsonb)::text,
			i.buyer_address::text, i.ship_to::text
		FROM chain_records c
		LEFT JOIN LATERAL (
			SELECT * FROM invoices i
			WHERE i.series_id = c.series_id AND i.fy = c.fy AND i.serial = c.serial AND i.seller_id = $3
			OFFSET 0
		) i ON true
		WHERE c.series_id = $1 AND c.fy = $2 AND c.seller_id = $3
		ORDER BY c.position, i.id`, s.ID, int(fy), s.SellerID)
	if err != nil {
		return translate(err, "read chain")
	}
	defer rows.Close()
	var r recordRow
	for rows.Next() {
		r = recordRow{}
		f := &r.Inv
		if err := rows.Scan(&r.Position, &r.Kind, &r.Serial, &r.RecordedAt, &r.Hash, &r.Found,
			&f.Number, &f.InvoiceDate, &f.IssuedAt, &f.Status, &f.CancelReason, &f.CancelledAt, &f.BuyerGSTIN,
			&f.Taxable, &f.CGST, &f.SGST, &f.IGST, &f.Total,
			&f.BuyerName, &f.PlaceOfSupply, &f.OriginalNumber, &f.OriginalDate, &f.Items, &f.BuyerAddress, &f.ShipTo); err != nil {
			return translate(err, "read chain")
		}
		f.Serial = r.Serial
		if err := fn(&r); err != nil {
			return err
		}
	}
	return translate(rows.Err(), "read chain")
}

// invoiceRow is one invoice of a series-year with what its chain holds for
// it: how many issue and cancel records name its serial, and the stored
// hash of its (first) issue record.
type invoiceRow struct {
	ID       int64  // the invoice row's id
	PublicID string // its receipt's id ("" when it has none)
	invoiceFields
	Issues, Cancels               int64
	IssuePosition, CancelPosition int64 // of the first such record; 0 when none
	IssueHash, CancelHash         []byte
	// IRN and AckNo are its registration at the IRP ("" without one),
	// EInvoice and EInvoiceError its status and last error ("" without a
	// record).
	IRN, AckNo, EInvoice, EInvoiceError string
}

// walkInvoices streams the invoices of a series-year in serial order.
func walkInvoices(ctx context.Context, tx pgx.Tx, s gst.Series, fy gst.FY, fn func(*invoiceRow) error) error {
	return walkInvoicePage(ctx, tx, s, fy, RowQuery{}, fn)
}

// walkInvoicePage streams the invoices of a series-year that q selects
// (the zero RowQuery: all of them), in serial order.
//
// Both reads walk an index in the order they ask for, so that no plan can
// read the year for a page (db.ReadTx forbids the sorts that would have
// to follow any other index):
//   - the invoices: serials after q.After in serial order, on the
//     (series, year, serial) key; or the invoice numbered q.Number, asked
//     for as a range one number wide in number order, which only the
//     (seller, year, number) key gives.
//   - each invoice's chain records: a LATERAL aggregate over its serial,
//     again a range one serial wide read in serial order, which only
//     chain_records_serial gives. Asked for by equality, the planner,
//     guessing "one row" for every index on tables not yet analysed after
//     a burst, probed the primary key (series, year, position) and
//     filtered the whole year's records by serial for every invoice: 20,099
//     rows thrown away per invoice of a 20,000-invoice year, 30 s for a
//     page of 100.
func walkInvoicePage(ctx context.Context, tx pgx.Tx, s gst.Series, fy gst.FY, q RowQuery, fn func(*invoiceRow) error) error {
	limit := int64(q.Limit)
	if limit <= 0 {
		limit = -1 // no limit
	}
	// Two statements, not ($4 = '' OR number = $4): no index serves that.
	page, order := "i.serial > $3 AND $4 = ''", "i.serial"
	if q.Number != "" {
		page, order = "i.number >= $4 AND i.number <= $4 AND $3 >= 0", "i.number"
	}
	rows, err := tx.Query(ctx, `
		SELECT i.id, i.serial, i.number, i.invoice_date, i.issued_at, i.status, coalesce(i.cancel_reason, ''), i.cancelled_at,
			coalesce(i.buyer_gstin, ''), i.taxable::text, i.cgst::text, i.sgst::text, i.igst::text, i.total::text,
			coalesce(i.buyer_name, ''), i.place_of_supply, coalesce(i.original_number, ''), i.original_date, i.items::text,
			coalesce(c.issues, 0), coalesce(c.cancels, 0), coalesce(c.issue_position, 0), coalesce(c.cancel_position, 0),
			c.issue_hash, c.cancel_hash, coalesce(i.public_id, ''), i.buyer_address::text, i.ship_to::text,
			coalesce(e.irn, ''), coalesce(e.ack_no, ''), coalesce(e.status, ''), coalesce(e.error, '')
		FROM invoices i
		LEFT JOIN e_invoices e ON e.invoice_id = i.id AND e.seller_id = $6
		LEFT JOIN LATERAL (
			SELECT
				count(*) FILTER (WHERE r.kind = 'issue') AS issues,
				count(*) FILTER (WHERE r.kind = 'cancel') AS cancels,
				min(r.position) FILTER (WHERE r.kind = 'issue') AS issue_position,
				min(r.position) FILTER (WHERE r.kind = 'cancel') AS cancel_position,
				(array_agg(r.hash ORDER BY r.position) FILTER (WHERE r.kind = 'issue'))[1] AS issue_hash,
				(array_agg(r.hash ORDER BY r.position) FILTER (WHERE r.kind = 'cancel'))[1] AS cancel_hash
			FROM (
				SELECT r.kind, r.position, r.hash FROM chain_records r
				WHERE r.series_id = i.series_id AND r.fy = i.fy AND r.serial >= i.serial AND r.serial <= i.serial AND r.seller_id = $6
				ORDER BY r.serial
			) r
		) c ON true
		WHERE i.series_id = $1 AND i.fy = $2 AND `+page+` AND i.seller_id = $6
		ORDER BY `+order+`
		LIMIT CASE WHEN $5::bigint < 0 THEN NULL ELSE $5::bigint END`, s.ID, int(fy), q.After, q.Number, limit, s.SellerID)
	if err != nil {
		return translate(err, "read invoices")
	}
	defer rows.Close()
	var r invoiceRow
	for rows.Next() {
		r = invoiceRow{}
		if err := rows.Scan(&r.ID, &r.Serial, &r.Number, &r.InvoiceDate, &r.IssuedAt, &r.Status, &r.CancelReason, &r.CancelledAt,
			&r.BuyerGSTIN, &r.Taxable, &r.CGST, &r.SGST, &r.IGST, &r.Total,
			&r.BuyerName, &r.PlaceOfSupply, &r.OriginalNumber, &r.OriginalDate, &r.Items,
			&r.Issues, &r.Cancels, &r.IssuePosition, &r.CancelPosition, &r.IssueHash, &r.CancelHash, &r.PublicID,
			&r.BuyerAddress, &r.ShipTo, &r.IRN, &r.AckNo, &r.EInvoice, &r.EInvoiceError); err != nil {
			return translate(err, "read invoices")
		}
		if err := fn(&r); err != nil {
			return err
		}
	}
	return translate(rows.Err(), "read invoices")
}

// declaredOpening is an opening declaration with its series code.
type declaredOpening struct {
	Code string
	invoice.Opening
}

// openingsOf returns the seller's opening declarations of year fy, by code.
func openingsOf(ctx context.Context, tx pgx.Tx, sellerID int64, fy gst.FY) ([]declaredOpening, error) {
	rows, err := tx.Query(ctx, `
		SELECT s.code, o.last_serial, o.last_invoice_date, o.last_number, o.declared_at, o.declared_by
		FROM series_openings o JOIN series s ON s.id = o.series_id AND s.seller_id = $1
		WHERE o.seller_id = $1 AND o.fy = $2 ORDER BY s.code`, sellerID, int(fy))
	if err != nil {
		return nil, translate(err, "openings")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (declaredOpening, error) {
		var d declaredOpening
		err := r.Scan(&d.Code, &d.LastSerial, &d.LastInvoiceDate, &d.LastNumber, &d.DeclaredAt, &d.DeclaredBy)
		d.FY = fy
		return d, err
	})
	return out, translate(err, "openings")
}

// endNumbers returns the numbers of the lowest and highest serials of s in
// fy ("" when it has none), by the (series_id, fy, serial) index.
func endNumbers(ctx context.Context, tx pgx.Tx, s gst.Series, fy gst.FY) (first, last string, err error) {
	err = tx.QueryRow(ctx, `
		SELECT coalesce((SELECT number FROM invoices WHERE series_id = $1 AND fy = $2 AND seller_id = $3 ORDER BY serial LIMIT 1), ''),
			coalesce((SELECT number FROM invoices WHERE series_id = $1 AND fy = $2 AND seller_id = $3 ORDER BY serial DESC LIMIT 1), '')`,
		s.ID, int(fy), s.SellerID).Scan(&first, &last)
	return first, last, translate(err, "first and last numbers")
}

// lockedPeriods returns the seller's months of year fy locked after filing.
func lockedPeriods(ctx context.Context, tx pgx.Tx, sellerID int64, fy gst.FY) ([]LockedPeriod, error) {
	rows, err := tx.Query(ctx, `
		SELECT to_char(period, 'MMYYYY'), locked_at, locked_by FROM period_locks
		WHERE seller_id = $1 AND period BETWEEN $2 AND $3 ORDER BY period`, sellerID, fy.Start(), fy.End())
	if err != nil {
		return nil, translate(err, "locked periods")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (LockedPeriod, error) {
		var l LockedPeriod
		var at time.Time
		err := r.Scan(&l.FP, &at, &l.LockedBy)
		l.LockedAt = document.Timestamp(at)
		return l, err
	})
	if out == nil {
		out = []LockedPeriod{}
	}
	return out, translate(err, "locked periods")
}

// activityCounts returns, per series of the seller, the invoices dated
// today and the invoices of year fy cancelled. Each count reads the index
// entries it counts (db.ReadTx): today's invoices on (seller,
// invoice_date), the cancelled ones on their partial index (migration
// 00037), each asked for in the order its index gives so that no other
// index can serve; both used to read every invoice of the seller's year.
func activityCounts(ctx context.Context, tx pgx.Tx, sellerID int64, today time.Time, fy gst.FY) (map[int64][2]int64, error) {
	rows, err := tx.Query(ctx, `
		SELECT series_id, 0, count(*) FROM (
			SELECT series_id FROM invoices WHERE seller_id = $1 AND invoice_date >= $2 AND invoice_date <= $2 ORDER BY invoice_date
		) today GROUP BY series_id
		UNION ALL
		SELECT series_id, 1, count(*) FROM (
			SELECT series_id FROM invoices WHERE seller_id = $1 AND fy = $3 AND status = 'cancelled' ORDER BY series_id
		) cancelled GROUP BY series_id`, sellerID, today, int(fy))
	if err != nil {
		return nil, translate(err, "series activity")
	}
	defer rows.Close()
	out := map[int64][2]int64{}
	for rows.Next() {
		var id, n int64
		var which int
		if err := rows.Scan(&id, &which, &n); err != nil {
			return nil, translate(err, "series activity")
		}
		c := out[id]
		c[which] = n
		out[id] = c
	}
	return out, translate(rows.Err(), "series activity")
}

// duplicateNumbers returns up to limit numbers of a series-year held by
// more than one invoice, with their serials, ordered by first serial.
func duplicateNumbers(ctx context.Context, tx pgx.Tx, s gst.Series, fy gst.FY, limit int) ([]DuplicateNumber, error) {
	rows, err := tx.Query(ctx, `
		SELECT number, array_agg(serial ORDER BY serial)
		FROM invoices WHERE series_id = $1 AND fy = $2 AND seller_id = $4
		GROUP BY number HAVING count(*) > 1
		ORDER BY min(serial) LIMIT $3`, s.ID, int(fy), limit, s.SellerID)
	if err != nil {
		return nil, translate(err, "find duplicate numbers")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DuplicateNumber, error) {
		var d DuplicateNumber
		err := r.Scan(&d.Number, &d.Serials)
		return d, err
	})
	return out, translate(err, "find duplicate numbers")
}

// docIssueRow is one series-year's documents dated in a period.
type docIssueRow struct {
	Code          string
	DocType       gst.DocType
	FY            gst.FY
	From, To      string
	Lo, Hi        int64
	Count, Cancel int64
}

// docIssueRows returns, per series-year of the seller, the documents dated
// from..to (civil dates, inclusive), ordered by series code.
func docIssueRows(ctx context.Context, tx pgx.Tx, sellerID int64, from, to time.Time) ([]docIssueRow, error) {
	rows, err := tx.Query(ctx, `
		WITH g AS (
			SELECT series_id, fy, min(serial) AS lo, max(serial) AS hi, count(*) AS n,
				count(*) FILTER (WHERE status = 'cancelled') AS cancelled
			FROM invoices
			WHERE seller_id = $1 AND invoice_date BETWEEN $2 AND $3
			GROUP BY series_id, fy
		)
		SELECT s.code, s.doc_type, g.fy,
			(SELECT number FROM invoices WHERE seller_id = $1 AND series_id = g.series_id AND fy = g.fy AND serial = g.lo ORDER BY id LIMIT 1),
			(SELECT number FROM invoices WHERE seller_id = $1 AND series_id = g.series_id AND fy = g.fy AND serial = g.hi ORDER BY id LIMIT 1),
			g.lo, g.hi, g.n, g.cancelled
		FROM g JOIN series s ON s.seller_id = $1 AND s.id = g.series_id
		ORDER BY s.code, g.fy`, sellerID, from, to)
	if err != nil {
		return nil, translate(err, "documents issued")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (docIssueRow, error) {
		var d docIssueRow
		var dt string
		var fy int
		err := r.Scan(&d.Code, &dt, &fy, &d.From, &d.To, &d.Lo, &d.Hi, &d.Count, &d.Cancel)
		d.DocType, d.FY = gst.DocType(dt), gst.FY(fy)
		return d, err
	})
	return out, translate(err, "documents issued")
}

// declaredIn adds to rows (docIssueRows of the same period) the serials
// settlements declared spent on a date from..to (civil dates, inclusive):
// each widens its series-year's range from..to and counts in totnum and as
// cancelled; a series-year with nothing else in the period gets a row of
// its own. The result is ordered by series code, then year.
func declaredIn(ctx context.Context, tx pgx.Tx, sellerID int64, from, to time.Time, rows []docIssueRow) ([]docIssueRow, error) {
	q, err := tx.Query(ctx, `
		SELECT s.code, s.doc_type, s.format, d.fy, min(d.first_serial), max(d.last_serial), sum(d.last_serial - d.first_serial + 1)
		FROM serial_declarations d JOIN series s ON s.seller_id = $1 AND s.id = d.series_id
		WHERE d.seller_id = $1 AND d.declared_on BETWEEN $2 AND $3
		GROUP BY s.code, s.doc_type, s.format, d.fy`, sellerID, from, to)
	if err != nil {
		return nil, translate(err, "declared serials")
	}
	type decl struct {
		code, docType, format string
		fy                    int
		lo, hi, n             int64
	}
	ds, err := pgx.CollectRows(q, func(r pgx.CollectableRow) (decl, error) {
		var d decl
		err := r.Scan(&d.code, &d.docType, &d.format, &d.fy, &d.lo, &d.hi, &d.n)
		return d, err
	})
	if err != nil {
		return nil, translate(err, "declared serials")
	}
	for _, d := range ds {
		f, err := gst.ParseFormat(d.format)
		if err != nil {
			return nil, fmt.Errorf("reports: series %s: %w", d.code, err)
		}
		fy := gst.FY(d.fy)
		i := slices.IndexFunc(rows, func(r docIssueRow) bool { return r.Code == d.code && r.FY == fy })
		if i < 0 {
			rows = append(rows, docIssueRow{Code: d.code, DocType: gst.DocType(d.docType), FY: fy, Lo: d.lo, Hi: d.hi,
				From: mustRender(f, fy, d.lo), To: mustRender(f, fy, d.hi)})
			i = len(rows) - 1
		}
		r := &rows[i]
		if d.lo < r.Lo {
			r.Lo, r.From = d.lo, mustRender(f, fy, d.lo)
		}
		if d.hi > r.Hi {
			r.Hi, r.To = d.hi, mustRender(f, fy, d.hi)
		}
		r.Count += d.n
		r.Cancel += d.n
	}
	slices.SortFunc(rows, func(a, b docIssueRow) int { return cmp.Or(cmp.Compare(a.Code, b.Code), cmp.Compare(a.FY, b.FY)) })
	return rows, nil
}

// mustRender renders a serial the format was checked to hold (a stored
// declaration's).
func mustRender(f gst.Format, fy gst.FY, serial int64) string {
	s, _ := f.Render(fy, serial)
	return s
}

// translate returns err as db.Translate does, wrapped as
// "reports: what: err"; nil stays nil.
func translate(err error, what string) error { return db.Translate(err, "reports: "+what) }
