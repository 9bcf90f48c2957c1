package invoice

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/dbtest"
)

// schemaColumn is a column of a table as the tables of row_store.go
// describe it: its name and the type the database stores.
type schemaColumn struct{ name, typ string }

// tableColumns returns cols as the columns they write, each with the type
// stored (a constant's type is the schema's: typ "").
func tableColumns[R any](cols []column[R]) []schemaColumn {
	out := make([]schemaColumn, len(cols))
	for i, c := range cols {
		out[i] = schemaColumn{c.name, cmp.Or(c.cast, c.typ)}
	}
	return out
}

// TestRowTablesMatchSchema holds the column tables of row_store.go to the
// migrated schema, and invoiced_issue_rows_v2's call (issueRowsParams) to
// the function's parameters: a column added to a migration and not to its
// table (or the other way), a type that differs, or a parameter the call
// does not pass, fails naming it.
func TestRowTablesMatchSchema(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.New(t)
	for _, tc := range []struct {
		table, in string
		cols      []schemaColumn
		// notWritten are the table's columns no issue writes, with why:
		// each needs a place here, so that a new column is a decision.
		notWritten map[string]string
	}{
		{"invoices", "invoiceTable", tableColumns(invoiceTable), map[string]string{
			"id": "the identity's", "status": "'issued' by default; a cancel's",
			"cancelled_at": "a cancel's", "cancel_reason": "a cancel's"}},
		{"chain_records", "chainTable", tableColumns(chainTable), map[string]string{}},
		{"events", "eventTable", tableColumns(eventTable), map[string]string{"id": "the identity's"}},
	} {
		schema := columnsOf(ctx, t, pool, tc.table)
		for _, c := range tc.cols {
			typ, ok := schema[c.name]
			switch {
			case !ok:
				t.Errorf("%s.%s: in %s (invoice/row_store.go) but not in the migrated schema: add it in a migration", tc.table, c.name, tc.in)
			case c.typ != "" && canonicalType(ctx, t, pool, c.typ) != typ:
				t.Errorf("%s.%s: %s stores it as %s, the schema as %s", tc.table, c.name, tc.in, c.typ, typ)
			}
		}
		for name := range schema {
			if _, skip := tc.notWritten[name]; skip {
				continue
			}
			if !slices.ContainsFunc(tc.cols, func(c schemaColumn) bool { return c.name == name }) {
				t.Errorf("%s.%s: in the migrated schema but not in %s (invoice/row_store.go): add it there, or to this test's notWritten with why no issue writes it", tc.table, name, tc.in)
			}
		}
	}

	var args string
	if err := pool.QueryRow(ctx, `SELECT pg_get_function_identity_arguments(p.oid) FROM pg_proc p
		WHERE p.proname = 'invoiced_issue_rows_v2' AND p.pronamespace = current_schema()::regnamespace`).Scan(&args); err != nil {
		t.Fatalf("invoiced_issue_rows_v2: %v", err)
	}
	fn := map[string]string{}
	for _, a := range strings.Split(args, ", ") {
		name, typ, _ := strings.Cut(a, " ")
		fn[name] = typ
	}
	for _, p := range issueRowsParams {
		typ, ok := fn[p.name]
		switch {
		case !ok:
			t.Errorf("invoiced_issue_rows_v2 has no parameter %s, which issueRowsSQL passes", p.name)
		case canonicalType(ctx, t, pool, p.typ) != typ:
			t.Errorf("invoiced_issue_rows_v2(%s %s): issueRowsSQL passes it as %s", p.name, typ, p.typ)
		}
		delete(fn, p.name)
	}
	for name, typ := range fn {
		t.Errorf("invoiced_issue_rows_v2(%s %s): a parameter issueRowsSQL does not pass (issueRowsParams, invoice/delegated_store.go)", name, typ)
	}
}

// columnsOf returns the columns of table in the migrated schema, each
// with its type as format_type spells it without a modifier.
func columnsOf(ctx context.Context, t *testing.T, q db.Querier, table string) map[string]string {
	t.Helper()
	rows, err := q.Query(ctx, `SELECT column_name::text, udt_name::regtype::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		cols[name] = typ
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cols) == 0 {
		t.Fatalf("no table %s in the migrated schema", table)
	}
	return cols
}

// canonicalType returns typ ("int", "timestamptz[]") as the database
// spells it ("integer", "timestamp with time zone[]").
func canonicalType(ctx context.Context, t *testing.T, q db.Querier, typ string) string {
	t.Helper()
	var s string
	if err := q.QueryRow(ctx, `SELECT $1::regtype::text`, typ).Scan(&s); err != nil {
		t.Fatalf("type %s: %v", typ, err)
	}
	return s
}
