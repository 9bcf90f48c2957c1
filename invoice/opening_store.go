package invoice

import (
	"context"
	"errors"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL of opening declarations (docs/openings.md).

// DeclareOpeningTx records opening o of series s of seller inside tx (the
// transaction that creates the series, or any before the series-year's
// first invoice), declared by by at now: the counter row of o.FY starts at
// o.LastSerial and o.LastInvoiceDate, and the chain's first record seals
// the declaration. It returns document.ErrInvalid when o does not fit the series
// (Opening.check), ErrOpeningTooLate when the series-year has a counter row
// already (an invoice or an opening), and database errors.
func DeclareOpeningTx(ctx context.Context, tx pgx.Tx, seller gst.Seller, s gst.Series, o Opening, by string, now time.Time) (Opening, error) {
	if err := o.check(s, gst.DateIST(now)); err != nil {
		return Opening{}, err
	}
	o.DeclaredAt, o.DeclaredBy = now.UTC().Truncate(time.Microsecond), by
	hash := OpeningRecord(string(seller.GSTIN), s, o).Hash()
	args := pgx.NamedArgs{
		"series_id": s.ID, "fy": int(o.FY), "seller_id": seller.ID, "capacity": s.Format.Capacity(),
		"last_serial": o.LastSerial, "last_invoice_date": o.LastInvoiceDate, "last_number": o.LastNumber,
		"declared_at": o.DeclaredAt, "declared_by": o.DeclaredBy, "hash": hash,
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO series_counters (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at, chain_length, chain_head)
		VALUES (@series_id, @fy, @seller_id, @last_serial, @capacity, @last_invoice_date, @declared_at, 1, @hash) ON CONFLICT DO NOTHING`,
		args)
	if err != nil {
		return Opening{}, translate(err, "declare opening")
	}
	if tag.RowsAffected() == 0 {
		return Opening{}, apperr.Errorf(ErrOpeningTooLate, "series %s already has invoices (or an opening) in %s", s.Code, o.FY)
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO chain_records (series_id, fy, position, kind, serial, recorded_at, hash, seller_id)
		VALUES (@series_id, @fy, 1, 'opening', @last_serial, @declared_at, @hash, @seller_id)`, args)
	b.Queue(`INSERT INTO series_openings (series_id, fy, last_serial, last_invoice_date, last_number, declared_at, declared_by, seller_id)
		VALUES (@series_id, @fy, @last_serial, @last_invoice_date, @last_number, @declared_at, @declared_by, @seller_id)`, args)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return Opening{}, translate(err, "declare opening")
	}
	return o, nil
}

// OpeningOf returns the opening declared for series s in fy; found is
// false when there is none.
func OpeningOf(ctx context.Context, q db.Querier, s gst.Series, fy gst.FY) (o Opening, found bool, err error) {
	err = q.QueryRow(ctx, `SELECT last_serial, last_invoice_date, last_number, declared_at, declared_by FROM series_openings
		WHERE series_id = $1 AND fy = $2 AND seller_id = $3`,
		s.ID, int(fy), s.SellerID).Scan(&o.LastSerial, &o.LastInvoiceDate, &o.LastNumber, &o.DeclaredAt, &o.DeclaredBy)
	if errors.Is(err, pgx.ErrNoRows) {
		return Opening{}, false, nil
	}
	if err != nil {
		return Opening{}, false, translate(err, "read opening")
	}
	o.FY = fy
	return o, true, nil
}

// declaredOriginal reports whether o names a document declared as issued
// before invoiced: a number that an invoice-type series of seller with an
// opening in o's year renders for a declared serial, dated no later than
// the opening's last date.
func declaredOriginal(ctx context.Context, q db.Querier, seller gst.Seller, o *document.Original) (bool, error) {
	fy := gst.FYOf(o.InvoiceDate)
	rows, err := q.Query(ctx, `
		SELECT s.format, o.last_serial FROM series_openings o JOIN series s ON s.id = o.series_id AND s.seller_id = o.seller_id
		WHERE s.seller_id = $1 AND o.seller_id = $1 AND o.fy = $2 AND o.last_invoice_date >= $3
			AND s.doc_type IN ('invoice', 'bill_of_supply', 'revised_invoice', 'inward_supply_unregistered')`,
		seller.ID, int(fy), o.InvoiceDate)
	if err != nil {
		return false, translate(err, "find declared original")
	}
	type opening struct {
		format string
		last   int64
	}
	ops, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (opening, error) {
		var op opening
		err := r.Scan(&op.format, &op.last)
		return op, err
	})
	if err != nil {
		return false, translate(err, "find declared original")
	}
	for _, op := range ops {
		f, err := gst.ParseFormat(op.format)
		if err != nil {
			return false, err
		}
		for k := int64(1); k <= op.last; k++ { // at most the format's capacity renders
			if n, err := f.Render(fy, k); err == nil && n == o.Number {
				return true, nil
			}
		}
	}
	return false, nil
}
