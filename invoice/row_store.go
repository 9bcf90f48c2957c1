package invoice

import (
	"strconv"
	"strings"
	"time"
)

// This file defines, once, the rows the issuing paths write: each column
// of table invoices and of table chain_records (an issue record), with
// the type its value is sent as and how that value is taken from the Go
// row being written, and the idempotency keys' rows as the issue inserts
// join them to their invoices. The statements of every issuing path (the
// unnest insert of writes.queue, the VALUES of queueRouted and
// writeOffline) and the invoice and chain arguments of
// invoiced_issue_rows_v2 (issueRowsSQL) are generated from these tables
// when the package is loaded. TestRowTablesMatchSchema holds them to the
// migrated schema and to the function's parameters: a column added to
// one place only fails it, naming the column.

// column is one column a statement writes from rows of type R.
type column[R any] struct {
	name string // the table's column (or, for keyTable, the alias the insert joins on)
	// typ is the SQL type the value is sent as (each parameter is cast to
	// it; unnest and invoiced_issue_rows_v2 take an array of it); cast,
	// when set, the column's type the value is then cast to ("text" sent,
	// "jsonb" stored).
	typ, cast string
	// param is the parameter of invoiced_issue_rows_v2 that carries the
	// column ("" when the call does not: the keys, a constant).
	param string
	// constant is SQL written instead of a value ("'issue'"); typ, value
	// and array are then unset.
	constant string
	value    func(*R) any  // the column's value in one row, for VALUES
	array    func([]R) any // the column's values in rows, one typed array, for unnest
}

// col returns the column name of rows R, sent as typ and read by get.
func col[R, V any](name, typ, param string, get func(*R) V) column[R] {
	return column[R]{name: name, typ: typ, param: param,
		value: func(r *R) any { return get(r) },
		array: func(rows []R) any {
			a := make([]V, len(rows))
			for i := range rows {
				a[i] = get(&rows[i])
			}
			return a
		}}
}

// castTo returns c stored as type t after it is sent as c.typ.
func (c column[R]) castTo(t string) column[R] {
	c.cast = t
	return c
}

// invoiceTable is table invoices as the issuing paths fill it (the id,
// status and cancellation columns are the database's or a cancel's).
var invoiceTable = []column[invoiceRow]{
	col("seller_id", "bigint", "i_seller", func(r *invoiceRow) int64 { return r.sellerID }),
	col("series_id", "bigint", "i_series", func(r *invoiceRow) int64 { return r.seriesID }),
	col("fy", "int", "i_fy", func(r *invoiceRow) int32 { return r.fy }),
	col("serial", "bigint", "i_serial", func(r *invoiceRow) int64 { return r.serial }),
	col("number", "text", "i_number", func(r *invoiceRow) string { return r.number }),
	col("invoice_date", "date", "i_date", func(r *invoiceRow) time.Time { return r.date }),
	col("issued_at", "timestamptz", "i_at", func(r *invoiceRow) time.Time { return r.issuedAt }),
	col("public_id", "text", "i_public_id", func(r *invoiceRow) string { return r.publicID }),
	col("buyer_gstin", "text", "i_bg", func(r *invoiceRow) *string { return r.buyerGSTIN }),
	col("buyer_name", "text", "i_bn", func(r *invoiceRow) *string { return r.buyerName }),
	col("place_of_supply", "text", "i_pos", func(r *invoiceRow) string { return r.placeOfSupply }),
	col("original_number", "text", "i_onum", func(r *invoiceRow) *string { return r.originalNumber }),
	col("original_date", "date", "i_odate", func(r *invoiceRow) *time.Time { return r.originalDate }),
	col("items", "text", "i_items", func(r *invoiceRow) string { return r.items }).castTo("jsonb"),
	col("taxable", "text", "i_taxable", func(r *invoiceRow) string { return r.taxable }).castTo("numeric"),
	col("cgst", "text", "i_cgst", func(r *invoiceRow) string { return r.cgst }).castTo("numeric"),
	col("sgst", "text", "i_sgst", func(r *invoiceRow) string { return r.sgst }).castTo("numeric"),
	col("igst", "text", "i_igst", func(r *invoiceRow) string { return r.igst }).castTo("numeric"),
	col("total", "text", "i_total", func(r *invoiceRow) string { return r.total }).castTo("numeric"),
	col("original_external_reason", "text", "i_oext", func(r *invoiceRow) *string { return r.originalExternal }),
	col("buyer_address", "text", "i_baddr", func(r *invoiceRow) *string { return r.buyerAddress }).castTo("jsonb"),
	col("ship_to", "text", "i_ship", func(r *invoiceRow) *string { return r.shipTo }).castTo("jsonb"),
}

// chainTable is table chain_records as an issue fills it.
var chainTable = []column[chainRow]{
	col("series_id", "bigint", "r_series", func(r *chainRow) int64 { return r.seriesID }),
	col("fy", "int", "r_fy", func(r *chainRow) int32 { return r.fy }),
	col("position", "bigint", "r_position", func(r *chainRow) int64 { return r.position }),
	{name: "kind", constant: "'issue'"},
	col("serial", "bigint", "r_serial", func(r *chainRow) int64 { return r.serial }),
	col("recorded_at", "timestamptz", "r_at", func(r *chainRow) time.Time { return r.at }),
	col("hash", "bytea", "r_hash", func(r *chainRow) []byte { return r.hash }),
	col("seller_id", "bigint", "r_seller", func(r *chainRow) int64 { return r.sellerID }),
}

// keyTable is the idempotency keys as the issue inserts send them: each
// names its invoice by seller, series, year and serial, which the insert
// joins to the invoices' ids (invoiced_issue_rows_v2 takes them by the
// invoice's position instead: keyArgs).
var keyTable = []column[keyRow]{
	col("seller_id", "bigint", "", func(r *keyRow) int64 { return r.sellerID }),
	col("series_id", "bigint", "", func(r *keyRow) int64 { return r.seriesID }),
	col("fy", "int", "", func(r *keyRow) int32 { return r.fy }),
	col("serial", "bigint", "", func(r *keyRow) int64 { return r.serial }),
	col("key", "text", "", func(r *keyRow) string { return r.key }),
	col("hash", "bytea", "", func(r *keyRow) []byte { return r.requestHash }),
}

// eventRow is an event of table events, recorded with the invoice it is
// about (the outbox, docs/webhooks.md).
type eventRow struct {
	sellerID  int64
	typ       string
	invoiceID int64
	at        time.Time
}

// eventTable is table events as an issue or a cancel fills it (the id is
// the sequence's; invoiced_issue_rows_v2 takes ids for its events).
var eventTable = []column[eventRow]{
	col("seller_id", "bigint", "", func(r *eventRow) int64 { return r.sellerID }),
	col("type", "text", "", func(r *eventRow) string { return r.typ }),
	col("invoice_id", "bigint", "", func(r *eventRow) int64 { return r.invoiceID }),
	col("created_at", "timestamptz", "", func(r *eventRow) time.Time { return r.at }),
}

// arrays returns rows as one typed array per column of cols that takes a
// value, in order: the parameters of unnestOf(cols, …) and, for the
// invoice and chain tables, of invoiced_issue_rows_v2.
func arrays[R any](cols []column[R], rows []R) []any {
	out := make([]any, 0, len(cols))
	for _, c := range cols {
		if c.array != nil {
			out = append(out, c.array(rows))
		}
	}
	return out
}

// sent returns the columns of cols that take a value.
func sent[R any](cols []column[R]) []column[R] {
	var out []column[R]
	for _, c := range cols {
		if c.constant == "" {
			out = append(out, c)
		}
	}
	return out
}

// names returns the names of cols, comma-separated.
func names[R any](cols []column[R]) string {
	n := make([]string, len(cols))
	for i, c := range cols {
		n[i] = c.name
	}
	return strings.Join(n, ", ")
}

// paramOf returns the number of the parameter of column name in a
// statement whose parameters are cols' values from $first on.
func paramOf[R any](cols []column[R], first int, name string) string {
	for i, c := range sent(cols) {
		if c.name == name {
			return "$" + strconv.Itoa(first+i)
		}
	}
	panic("invoice: no column " + name)
}

// unnestOf returns "unnest($first::typ[], …) AS alias(names)": cols'
// values as rows, the arrays of arrays(cols, …) its parameters from
// $first on.
func unnestOf[R any](cols []column[R], first int, alias string) string {
	var b strings.Builder
	b.WriteString("unnest(")
	s := sent(cols)
	for i, c := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(first+i) + "::" + c.typ + "[]")
	}
	b.WriteString(") AS " + alias + "(" + names(s) + ")")
	return b.String()
}

// insertUnnestSQL returns the insert into table of the rows of
// unnestOf(cols, first, "u"), each value cast to its column's type.
func insertUnnestSQL[R any](table string, cols []column[R], first int) string {
	sel := make([]string, len(cols))
	for i, c := range cols {
		switch {
		case c.constant != "":
			sel[i] = c.constant
		case c.cast != "":
			sel[i] = "u." + c.name + "::" + c.cast
		default:
			sel[i] = "u." + c.name
		}
	}
	return "INSERT INTO " + table + " (" + names(cols) + ")\n\t\t\tSELECT " + strings.Join(sel, ", ") +
		"\n\t\t\tFROM " + unnestOf(cols, first, "u")
}

// valuesInsert is an INSERT … VALUES of rows R, its rows written per call.
type valuesInsert[R any] struct {
	cols   []column[R]
	prefix string   // "INSERT INTO table (names) VALUES "
	casts  []string // per column: "::typ[::cast]" after its parameter, or the constant
}

// valuesInsertOf returns the INSERT … VALUES into table of cols.
func valuesInsertOf[R any](table string, cols []column[R]) *valuesInsert[R] {
	v := &valuesInsert[R]{cols: cols, prefix: "INSERT INTO " + table + " (" + names(cols) + ") VALUES "}
	for _, c := range cols {
		switch {
		case c.constant != "":
			v.casts = append(v.casts, c.constant)
		case c.cast != "":
			v.casts = append(v.casts, "::"+c.typ+"::"+c.cast)
		default:
			v.casts = append(v.casts, "::"+c.typ)
		}
	}
	return v
}

// row writes to sql one row of VALUES for r, ", "-separated from the row
// before when there is one, its placeholders numbered after args, and
// returns args with r's values appended.
func (v *valuesInsert[R]) row(sql *strings.Builder, args []any, r *R) []any {
	if len(args) > 0 {
		sql.WriteString(", ")
	}
	var num [20]byte
	sql.WriteByte('(')
	for i, c := range v.cols {
		if i > 0 {
			sql.WriteString(", ")
		}
		if c.constant != "" {
			sql.WriteString(c.constant)
			continue
		}
		args = append(args, c.value(r))
		sql.WriteByte('$')
		sql.Write(strconv.AppendInt(num[:0], int64(len(args)), 10))
		sql.WriteString(v.casts[i])
	}
	sql.WriteByte(')')
	return args
}

// one returns the insert of one row, with suffix appended ("RETURNING id").
func (v *valuesInsert[R]) one(suffix string) string {
	var sql strings.Builder
	sql.WriteString(v.prefix)
	var zero R
	v.row(&sql, nil, &zero)
	return sql.String() + suffix
}

// values returns r's values in the order of a row's placeholders.
func (v *valuesInsert[R]) values(r *R) []any {
	args := make([]any, 0, len(v.cols))
	for _, c := range v.cols {
		if c.value != nil {
			args = append(args, c.value(r))
		}
	}
	return args
}

// The statements generated from the tables, once.
var (
	invoiceValues = valuesInsertOf("invoices", invoiceTable)
	chainValues   = valuesInsertOf("chain_records", chainTable)
	eventValues   = valuesInsertOf("events", eventTable)
	// invoiceOneSQL and chainOneSQL insert one row (writeOffline).
	invoiceOneSQL = invoiceValues.one(" RETURNING id")
	chainOneSQL   = chainValues.one("")
)
