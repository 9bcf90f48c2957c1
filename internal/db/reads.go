package db

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Reads whose cost must follow what they are asked for, not what the
// planner believes at the moment. Two beliefs have misled it:
//
//   - Tables a burst filled before any ANALYZE carry no statistics: every
//     equality is then guessed to keep a two-hundredth of the rows, a
//     series-year of 20,000 invoices is "one row", and a plan that
//     filters or sorts the whole year looks as cheap as one that walks an
//     index to the page (docs/threat-model.md has the figures).
//   - A prepared statement goes generic after five executions; its plan
//     is then made for the average seller, and one seller a thousand
//     times larger than the rest reads the year for a page.
//
// A read transaction (ReadTx) therefore plans every statement with its
// parameters' values (plan_cache_mode = force_custom_plan) and forbids the
// plans that cannot stop at what was asked: sequential and bitmap scans,
// sorts, hash and merge joins. What remains is an index walked in the
// order the statement asks for, stopping at its LIMIT, with nested loops
// into unique indexes; a statement whose ORDER BY matches an index gets
// that index whatever the statistics say, and a walk of a whole
// series-year is one pass over its index with one probe per row, never a
// join that compares every row with every other. A plan the forbidden
// kinds are the only way to run is still run (PostgreSQL only weighs them
// down), so nothing fails for them. JIT compilation is off too: a walk of
// a large year looked expensive enough to compile, which cost 450 ms of
// its 2.7 s and saved nothing on a plan that is one pass over an index.
// The settings end with the transaction and are sent with its BEGIN, in
// the same round trip.
//
// internal/readplans holds the test that runs every read route on
// unanalysed and skewed tables and checks what each statement's plan did.
const readBegin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL plan_cache_mode = force_custom_plan" +
	"; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off" +
	"; SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off; SET LOCAL jit = off"

// ReadTx runs fn in a read-only REPEATABLE READ transaction begun on b
// (one snapshot for all its statements) whose statements are planned as
// above, and returns what InTx returns.
func ReadTx(ctx context.Context, b OptionsBeginner, fn func(pgx.Tx) error) error {
	return InTxWith(ctx, b, pgx.TxOptions{BeginQuery: readBegin}, fn)
}
