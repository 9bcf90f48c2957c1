package invoice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
)

// This file holds the SQL that reads invoices.

const invoiceCols = `i.id, i.public_id, i.seller_id, i.series_id, s.code, s.doc_type, i.fy, i.serial, i.number,
	i.invoice_date, i.issued_at, i.status, i.buyer_gstin, i.buyer_name, i.place_of_supply,
	i.original_number, i.original_date, i.items, i.taxable, i.cgst, i.sgst, i.igst, i.total,
	i.cancelled_at, i.cancel_reason, i.original_external_reason, i.buyer_address::text, i.ship_to::text`

const invoiceFrom = ` FROM invoices i JOIN series s ON s.id = i.series_id AND s.seller_id = i.seller_id `

// readCols returns invoiceCols with the invoice's registration at the IRP
// (e_invoices, docs/e-invoice.md), for the reads that answer with invoices
// (scanRead), from readFrom or a FROM that joins e_invoices as e, invoices
// as i and series as s. seller is the SQL of the seller's id: the query's
// parameter where it has one, so that on Citus every table the statement
// reads is pinned to the seller's shard (a correlation through i.seller_id
// from a lateral subquery was refused as a join needing repartitioning).
//
// Without a row, the last column says whether the invoice waits for the
// IRP workers: its invoice.issued event has a pending delivery to its
// seller's subscriber of kind irp (the workers turn it into a row within a
// second or so; until then the invoice is pending, not "not applicable").
// Only a B2B invoice or note can wait, so a B2C invoice costs no probe.
// The probe is one lookup of the invoice's event and its deliveries by
// their keys. Its condition on the outer row that is not an equality
// (i.buyer_gstin IS NOT NULL, true wherever the probe runs) keeps
// PostgreSQL from planning it as a hashed subplan, which on fresh
// statistics read every pending delivery of every seller for one page
// (TestReadPlansBounded); OFFSET 0 would too, but Citus cannot push a
// correlated subquery with an OFFSET down to a shard.
func readCols(seller string) string {
	return invoiceCols + `, e.status, e.irn, e.ack_no, e.ack_date, e.signed_qr_code, e.error,
	CASE WHEN e.invoice_id IS NULL AND i.buyer_gstin IS NOT NULL AND s.doc_type IN ('invoice', 'credit_note', 'debit_note')
	THEN EXISTS (SELECT FROM events ev
		JOIN webhook_deliveries d ON d.seller_id = ev.seller_id AND d.event_id = ev.id AND d.state = 'pending'
		JOIN webhooks w ON w.seller_id = ev.seller_id AND w.id = d.webhook_id AND w.kind = 'irp'
		WHERE ev.seller_id = ` + seller + ` AND ev.invoice_id = i.id AND ev.type = 'invoice.issued'
		  AND i.buyer_gstin IS NOT NULL) END`
}

// readFrom is invoiceFrom with the invoice's registration (readCols).
const readFrom = invoiceFrom + `LEFT JOIN e_invoices e ON e.invoice_id = i.id AND e.seller_id = i.seller_id `

// scanRead scans a row of readCols' columns.
func scanRead(row pgx.Row) (document.Invoice, error) { return scanReadAfter(row) }

// scanReadAfter scans a row of lead's columns followed by readCols into
// lead and the invoice it returns.
func scanReadAfter(row pgx.Row, lead ...any) (document.Invoice, error) {
	var status, irn, ackNo, qr, errText *string
	var ackDate *time.Time
	var queued *bool
	inv, err := scanInvoiceWith(row, lead, &status, &irn, &ackNo, &ackDate, &qr, &errText, &queued)
	if err != nil {
		return document.Invoice{}, err
	}
	e := &inv.EInvoice
	switch {
	case status != nil:
		e.Status = document.EInvoiceStatus(*status)
	case queued != nil && *queued:
		e.Status = "pending"
	default:
		e.Status = "not_applicable"
	}
	e.IRN, e.AckNo, e.SignedQRCode, e.Error = deref(irn), deref(ackNo), deref(qr), deref(errText)
	if ackDate != nil {
		e.AckDate = *ackDate
	}
	return inv, nil
}

func scanInvoice(row pgx.Row) (document.Invoice, error) { return scanInvoiceWith(row, nil) }

// scanInvoiceWith scans a row of lead's columns, invoiceCols and the
// columns more reads into, in that order, into lead, more and the invoice
// it returns.
func scanInvoiceWith(row pgx.Row, lead []any, more ...any) (document.Invoice, error) {
	var inv document.Invoice
	var dt string
	var fy int
	var bg, bn, on, reason, oext, baddr, ship *string
	var od *time.Time
	var items []byte
	var taxable, cgst, sgst, igst, total decimal.Decimal
	cols := make([]any, 0, len(lead)+28+len(more))
	cols = append(cols, lead...)
	cols = append(cols, &inv.ID, &inv.PublicID, &inv.SellerID, &inv.SeriesID, &inv.SeriesCode, &dt, &fy, &inv.Serial, &inv.Number,
		&inv.InvoiceDate, &inv.IssuedAt, &inv.Status, &bg, &bn, &inv.PlaceOfSupply,
		&on, &od, &items, &taxable, &cgst, &sgst, &igst, &total, &inv.CancelledAt, &reason, &oext, &baddr, &ship)
	err := row.Scan(append(cols, more...)...)
	if err != nil {
		return document.Invoice{}, err
	}
	inv.DocType, inv.FY = gst.DocType(dt), gst.FY(fy)
	if bg != nil || bn != nil || baddr != nil {
		inv.Buyer = &document.Buyer{GSTIN: deref(bg), Name: deref(bn)}
	}
	if err := document.ParseAddresses(inv.Buyer, &inv.ShipTo, baddr, ship); err != nil {
		return document.Invoice{}, fmt.Errorf("invoice %d: stored %w", inv.ID, err)
	}
	if on != nil && od != nil {
		inv.Original = &document.Original{Number: *on, InvoiceDate: *od, ExternalReason: deref(oext)}
	}
	inv.Totals = document.Totals{Taxable: taxable, CGST: cgst, SGST: sgst, IGST: igst, Total: total}
	inv.CancelReason = deref(reason)
	if err := json.Unmarshal(items, &inv.Items); err != nil {
		return document.Invoice{}, fmt.Errorf("invoice %d: stored items: %w", inv.ID, err)
	}
	return inv, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func one(row pgx.Row, what string) (document.Invoice, error) {
	inv, err := scanRead(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return document.Invoice{}, ErrNotFound
	}
	if err != nil {
		return document.Invoice{}, translate(err, what)
	}
	return inv, nil
}

// Get returns the seller's invoice with id, or ErrNotFound (also when it
// belongs to another seller).
func Get(ctx context.Context, q db.Querier, sellerID, id int64) (document.Invoice, error) {
	return one(q.QueryRow(ctx, `SELECT `+readCols("$2")+readFrom+`WHERE i.id = $1 AND i.seller_id = $2`, id, sellerID), "get invoice")
}

// IDBySerial returns the internal id of the seller's invoice with serial
// in series seriesID and year fy, or ErrNotFound (also when the series is
// another seller's). It fails otherwise only on a database error.
func IDBySerial(ctx context.Context, q db.Querier, sellerID, seriesID int64, fy gst.FY, serial int64) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, `SELECT id FROM invoices WHERE series_id = $1 AND fy = $2 AND serial = $3 AND seller_id = $4`,
		seriesID, int(fy), serial, sellerID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, translate(err, "find invoice")
	}
	return id, nil
}

// List returns up to limit invoices of series s in fy with serials above
// after, in serial order.
func List(ctx context.Context, q db.Querier, s gst.Series, fy gst.FY, after int64, limit int) ([]document.Invoice, error) {
	return ListDated(ctx, q, s, fy, DateRange{}, after, limit)
}

// DateRange bounds invoice dates, both ends included; a zero end is open.
type DateRange struct {
	From, To time.Time // civil dates (midnight UTC, as gst.DateIST gives)
}

// ListDated is List restricted to invoices dated within r, read whole into
// a slice; EachDated reads them one at a time. It fails only on a
// database error.
func ListDated(ctx context.Context, q db.Querier, s gst.Series, fy gst.FY, r DateRange, after int64, limit int) ([]document.Invoice, error) {
	var out []document.Invoice
	err := EachDated(ctx, q, s, fy, r, after, limit, func(inv document.Invoice) error {
		out = append(out, inv)
		return nil
	})
	return out, err
}

// EachDated calls fn with each invoice of series s in fy dated within r
// whose serial is above after, in serial order, at most limit of them, as
// they arrive from the database. It returns fn's first error (reading no
// further), or a database error.
//
// Within a series-year invoice dates never decrease with the serial (the
// counter refuses an earlier date), so the invoices dated within r are
// consecutive serials. Their first and last are found by binary search
// over the (series, year, serial) key, one probe of a row per step (about
// 17 for 100,000 invoices), and the page is that range of the same key:
// the statement reads what it returns, whichever month is asked for. A
// filter on the date over the year's serials read every invoice before
// the month (180,050 of them for a late month of a large year).
func EachDated(ctx context.Context, q db.Querier, s gst.Series, fy gst.FY, r DateRange, after int64, limit int, fn func(document.Invoice) error) error {
	args := pgx.NamedArgs{"series": s.ID, "fy": int(fy), "seller": s.SellerID, "after": after, "limit": limit}
	var with, where string
	for _, b := range []struct {
		arg    string
		end    time.Time
		search string // the binary search's name
		past   string // "dated on or past the bound", of f.invoice_date
		page   string // the page's conditions given the search's result
	}{
		{"from", r.From, "first_in", ">= @from::date", "i.serial >= (SELECT lo FROM first_in WHERE lo >= hi) AND i.invoice_date >= @from::date"},
		{"to", r.To, "first_after", "> @to::date", "i.serial < (SELECT lo FROM first_after WHERE lo >= hi) AND i.invoice_date <= @to::date"},
	} {
		if b.end.IsZero() {
			continue
		}
		args[b.arg] = b.end.Format(time.DateOnly)
		with += fmt.Sprintf(`, %[1]s(lo, hi) AS (
			SELECT lo, hi FROM ends
			UNION ALL
			SELECT CASE WHEN p.past THEN b.lo ELSE (b.lo + b.hi) / 2 + 1 END, CASE WHEN p.past THEN (b.lo + b.hi) / 2 ELSE b.hi END
			FROM %[1]s b CROSS JOIN LATERAL (SELECT coalesce((
				SELECT f.invoice_date %[2]s FROM invoices f
				WHERE f.series_id = @series AND f.fy = @fy AND f.serial >= (b.lo + b.hi) / 2 AND f.seller_id = @seller
				ORDER BY f.serial LIMIT 1), true) AS past) p
			WHERE b.lo < b.hi
		)`, b.search, b.past)
		where += " AND " + b.page
	}
	if with != "" {
		// ends: the year's first serial and its last plus one; the
		// searches find, in [lo, hi], the first serial whose next invoice
		// (the first at or after it) is dated on or past their bound.
		with = `WITH RECURSIVE ends(lo, hi) AS (
			SELECT (SELECT serial FROM invoices WHERE series_id = @series AND fy = @fy AND seller_id = @seller ORDER BY serial LIMIT 1),
				(SELECT serial FROM invoices WHERE series_id = @series AND fy = @fy AND seller_id = @seller ORDER BY serial DESC LIMIT 1) + 1
		)` + with
	}
	rows, err := q.Query(ctx, with+` SELECT `+readCols("@seller")+readFrom+`
		WHERE i.series_id = @series AND i.fy = @fy AND i.serial > @after AND i.seller_id = @seller`+where+`
		ORDER BY i.serial LIMIT @limit`, args)
	if err != nil {
		return translate(err, "list invoices")
	}
	defer rows.Close()
	for rows.Next() {
		inv, err := scanRead(rows)
		if err != nil {
			return translate(err, "list invoices")
		}
		if err := fn(inv); err != nil {
			return err
		}
	}
	return translate(rows.Err(), "list invoices")
}

// CheckOriginal checks the original that draft d (a note) names: unless it
// is declared external, the seller must have issued here an invoice, bill
// of supply or revised invoice with that number and date, or declared it
// as issued before invoiced (an opening whose serials include the number,
// dated no later than the opening's last date). Invoices are
// never deleted, so a check before issuing stays true. It returns nil for a
// draft without an original, ErrOriginalNotFound, document.ErrInvalid when the
// number names a note or a voucher, and database errors.
func CheckOriginal(ctx context.Context, q db.Querier, seller gst.Seller, d *document.Draft) error {
	o := d.Original
	if o == nil || o.ExternalReason != "" {
		return nil
	}
	var dt string
	err := q.QueryRow(ctx, `
		SELECT s.doc_type FROM invoices i JOIN series s ON s.id = i.series_id AND s.seller_id = i.seller_id
		WHERE i.seller_id = $1 AND i.fy = $2 AND i.number = $3 AND i.invoice_date = $4`,
		seller.ID, int(gst.FYOf(o.InvoiceDate)), o.Number, o.InvoiceDate).Scan(&dt)
	if errors.Is(err, pgx.ErrNoRows) {
		declared, derr := declaredOriginal(ctx, q, seller, o)
		if derr != nil || declared {
			return derr
		}
		return apperr.Errorf(ErrOriginalNotFound, "original %s dated %s was not issued by %s here; if it was issued elsewhere or before the move to invoiced, send \"external\": true with a \"reason\"",
			o.Number, o.InvoiceDate.Format(time.DateOnly), seller.GSTIN)
	}
	if err != nil {
		return translate(err, "find original")
	}
	switch gst.DocType(dt) {
	case gst.Invoice, gst.BillOfSupply, gst.RevisedInvoice, gst.InwardSupplyUnregistered:
		return nil
	}
	return apperr.Errorf(document.ErrInvalid, "original %s is a %s; a note corrects an invoice", o.Number, dt)
}

// FindByNumber returns the seller's invoices whose number is number,
// compared case-insensitively (as the IRP compares document numbers):
// none, one, or, for a format without {FY}, one per financial year,
// newest year first. It fails only on a database error.
func FindByNumber(ctx context.Context, q db.Querier, sellerID int64, number string) ([]document.Invoice, error) {
	// Numbers are stored upper-case (formats are), and unique per seller
	// and year: one probe of the (seller, year, number) key per year the
	// seller has used, the years read from the counters of the seller's
	// series (its series by (seller, code), their counters by the primary
	// key's series prefix; series_counters has no index on the seller
	// alone, and a scan of it grows with every seller's years).
	rows, err := q.Query(ctx, `SELECT `+readCols("$1")+readFrom+`
		WHERE i.seller_id = $1 AND i.number = upper($2)
		  AND i.fy IN (SELECT c.fy FROM series sr JOIN series_counters c ON c.series_id = sr.id AND c.seller_id = $1 WHERE sr.seller_id = $1)
		ORDER BY i.fy DESC`, sellerID, number)
	if err != nil {
		return nil, translate(err, "find invoice by number")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (document.Invoice, error) { return scanRead(r) })
	if err != nil {
		return nil, translate(err, "find invoice by number")
	}
	return out, nil
}
