package reports

import (
	"fmt"
	"strconv"
	"time"

	"github.com/invoiced/invoiced/gst"
)

// This file holds the columns of the audit's rows: one entry per column
// says its header, its CSV text, its XLSX cell and the JSON key of the Row
// field the JSON export writes it from. A new column is one entry here
// (and its Row field); the writers only walk the table.

// column is one column of the audit's rows.
type column struct {
	header string  // CSV and XLSX header
	width  float64 // XLSX column width, in characters
	// json is the key of the Row field that carries the column in the
	// JSON export (json.Marshal of Row, which writes the fields in this
	// order; TestAuditColumnsAgree holds the two together).
	json string
	csv  func(*Row) string
	// xlsx returns the cell: nil for an empty cell, a plain value, or an
	// excelize.Cell in one of st's styles. It fails when a stored value
	// does not parse.
	xlsx func(r *Row, st *cellStyles) (any, error)
}

// cellStyles are the XLSX styles the cells use.
type cellStyles struct {
	bold, left, amount, date, datetime int
}

// auditColumns are the columns of the rows in order, shared by CSV, XLSX
// and JSON. Both CSV and XLSX write instants in IST with the offset (CSV
// as text, XLSX as date-time cells shown that way). New columns go before
// the two hashes, which stay last (docs/changes.md says when columns
// moved).
var auditColumns = []column{
	{header: "Serial", width: 9, json: "serial",
		csv:  func(r *Row) string { return strconv.FormatInt(r.Serial, 10) },
		xlsx: func(r *Row, _ *cellStyles) (any, error) { return r.Serial, nil }},
	textColumn("Number", 18, "number", plain, func(r *Row) string { return r.Number }),
	{header: "Invoice date", width: 12, json: "invoice_date",
		csv: func(r *Row) string { return r.InvoiceDate },
		xlsx: func(r *Row, st *cellStyles) (any, error) {
			return cellOf(st.date, r.invoiceDate), nil
		}},
	{header: "Issued at (IST)", width: 26, json: "issued_at",
		csv: func(r *Row) string { return istStamp(r.issuedAt) },
		xlsx: func(r *Row, st *cellStyles) (any, error) {
			return cellOf(st.datetime, r.issuedAt.In(gst.IST)), nil
		}},
	textColumn("Status", 10, "status", plain, func(r *Row) string { return r.Status }),
	typedColumn("Cancel reason", 30, "cancel_reason", func(r *Row) string { return r.CancelReason }),
	textColumn("Buyer GSTIN", 17, "buyer_gstin", optional, func(r *Row) string { return r.BuyerGSTIN }),
	textColumn("Taxable", 14, "taxable", amount, func(r *Row) string { return r.Taxable }),
	textColumn("CGST", 12, "cgst", amount, func(r *Row) string { return r.CGST }),
	textColumn("SGST", 12, "sgst", amount, func(r *Row) string { return r.SGST }),
	textColumn("IGST", 12, "igst", amount, func(r *Row) string { return r.IGST }),
	textColumn("Total", 14, "total", amount, func(r *Row) string { return r.Total }),
	typedColumn("Buyer name", 30, "buyer_name", func(r *Row) string { return r.BuyerName }),
	textColumn("Place of supply", 8, "place_of_supply", plain, func(r *Row) string { return r.PlaceOfSupply }),
	textColumn("Original number", 18, "original_number", optional, func(r *Row) string { return r.OriginalNumber }),
	{header: "Original date", width: 12, json: "original_date",
		csv: func(r *Row) string { return r.OriginalDate },
		xlsx: func(r *Row, st *cellStyles) (any, error) {
			if r.OriginalDate == "" {
				return nil, nil
			}
			d, err := time.Parse(time.DateOnly, r.OriginalDate)
			if err != nil {
				return nil, err
			}
			return cellOf(st.date, d), nil
		}},
	{header: "Cancelled at (IST)", width: 26, json: "cancelled_at",
		csv: func(r *Row) string {
			if r.cancelledAt == nil {
				return ""
			}
			return istStamp(*r.cancelledAt)
		},
		xlsx: func(r *Row, st *cellStyles) (any, error) {
			if r.cancelledAt == nil {
				return nil, nil
			}
			return cellOf(st.datetime, r.cancelledAt.In(gst.IST)), nil
		}},
	{header: "Issue position", width: 9, json: "issue_position",
		csv:  func(r *Row) string { return position(r.IssuePosition) },
		xlsx: func(r *Row, _ *cellStyles) (any, error) { return r.IssuePosition, nil }},
	{header: "Cancel position", width: 9, json: "cancel_position",
		csv:  func(r *Row) string { return position(r.CancelPosition) },
		xlsx: func(r *Row, _ *cellStyles) (any, error) { return nilIfZero(r.CancelPosition), nil }},
	textColumn("ID", 16, "id", plain, func(r *Row) string { return r.ID }),
	textColumn("Public ID", 32, "public_id", plain, func(r *Row) string { return r.PublicID }),
	typedColumn("Buyer address", 40, "buyer_address", func(r *Row) string { return r.BuyerAddress.oneLine() }),
	typedColumn("Ship to", 40, "ship_to", func(r *Row) string { return r.ShipTo.oneLine() }),
	textColumn("IRN", 66, "irn", optional, func(r *Row) string { return r.IRN }),
	textColumn("Ack No.", 17, "ack_no", optional, func(r *Row) string { return r.AckNo }),
	// The 64-hex-digit hashes last, out of the way of the columns a
	// person reads.
	textColumn("Hash", 66, "hash", plain, func(r *Row) string { return r.Hash }),
	textColumn("Cancel hash", 66, "cancel_hash", optional, func(r *Row) string { return r.CancelHash }),
}

// textColumn is a column of the text get returns: the CSV writes it as it
// is, the XLSX as cell says (plain, optional or amount).
func textColumn(header string, width float64, json string,
	cell func(func(*Row) string) func(*Row, *cellStyles) (any, error), get func(*Row) string) column {
	return column{header: header, width: width, json: json, csv: get, xlsx: cell(get)}
}

// typedColumn is a column of text someone typed (a reason, a name), which
// may be empty: the CSV defuses it (defuse), the XLSX leaves an empty
// cell for "".
func typedColumn(header string, width float64, json string, get func(*Row) string) column {
	c := textColumn(header, width, json, optional, get)
	c.csv = func(r *Row) string { return defuse(get(r)) }
	return c
}

// plain returns an XLSX cell of the text get returns, empty or not.
func plain(get func(*Row) string) func(*Row, *cellStyles) (any, error) {
	return func(r *Row, _ *cellStyles) (any, error) { return get(r), nil }
}

// optional returns an XLSX cell of the text get returns, or an empty cell
// for "".
func optional(get func(*Row) string) func(*Row, *cellStyles) (any, error) {
	return func(r *Row, _ *cellStyles) (any, error) { return nilIfEmpty(get(r)), nil }
}

// amount returns an XLSX number cell, shown with two places, of the
// decimal get returns; the cell fails when it does not parse.
func amount(get func(*Row) string) func(*Row, *cellStyles) (any, error) {
	return func(r *Row, st *cellStyles) (any, error) {
		a := get(r)
		v, err := strconv.ParseFloat(a, 64)
		if err != nil {
			return nil, fmt.Errorf("reports: amount %q of serial %d: %w", a, r.Serial, err)
		}
		return cellOf(st.amount, v), nil
	}
}

// columnHeaders returns the headers of auditColumns in order.
func columnHeaders() []string {
	h := make([]string, len(auditColumns))
	for i, c := range auditColumns {
		h[i] = c.header
	}
	return h
}

// position returns p in decimal, or "" for 0 (no such record).
func position(p int64) string {
	if p == 0 {
		return ""
	}
	return strconv.FormatInt(p, 10)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nilIfZero(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}
