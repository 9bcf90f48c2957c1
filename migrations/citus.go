package migrations

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/jackc/pgx/v5/pgxpool"
)

// On Citus (docs/scale-out.md) the seller-owned tables are distributed by
// seller_id and co-located: a seller's series, counter rows, invoices,
// chain records, idempotency keys, openings, leases, period locks, events,
// webhooks and e-invoice registrations live in one shard group on one
// worker, so every transaction of one request runs there alone (router
// execution, no two-phase commit).
// A table listed here carries seller_id in every primary and unique key
// (00020), and its foreign keys point at tables listed before it or at
// reference tables. A migration that adds a seller-owned table adds it
// here in the same commit (TestSellerOwnedTablesAreListed, package
// migrations, fails otherwise).
// series_leases comes right after series: series_counters' lease guard
// reads it on the worker, so a migration that stopped after distributing
// the counters but before the leases would leave every counter insert
// failing.
var distributedTables = []string{
	"series", "series_leases", "series_counters", "invoices", "chain_records", "idempotency_keys",
	"series_openings", "serial_declarations", "period_locks", "period_lock_events",
	"events", "webhooks", "webhook_deliveries", "e_invoices",
}

// Small global tables, copied to every node so that any shard can join
// them and check keys against them locally. Writes to them are two-phase
// commits over every node, which is fine for rows made once per seller,
// per key or per console login. sellers is one of them rather than
// distributed by its own id: its GSTIN is unique across all sellers, which
// a table distributed by id could not enforce; API keys and console
// sessions are found by their prefix or hash before the seller is known,
// which a table distributed by seller would ask of every shard.
var referenceTables = []string{"sellers", "api_keys", "console_sessions"}

// The tables that stay on the coordinator alone: the migrations' own
// bookkeeping, read only by invoiced at start.
var coordinatorTables = []string{"goose_db_version", "schema_compat", "invoiced_migration_history"}

// Functions that statements on distributed tables call on the workers,
// and invoiced_issue_rows_v2 (00041) and invoiced_issue_rows (00029, called
// by binaries of 00029 to 00040), which are delegated: a call whose seller
// (its first argument) is a constant runs whole on the worker that holds
// the seller's shard group (docs/scale-out.md, "One call per batch").
var distributedFunctions = []distributedFunction{
	{name: "invoiced_require"},
	{name: "invoiced_lease_guard"},
	{name: "invoiced_issue_rows", arg: "p_seller"},
	{name: "invoiced_issue_rows_v2", arg: "p_seller"},
}

// distributedFunction is a function, by its name (each is the only one of
// that name), that Citus copies to every node; with arg, calls are
// delegated by that argument, co-located with series.
type distributedFunction struct{ name, arg string }

// functionsNamed selects, for a name, the regprocedure of each function of
// that name in the current schema (one, see distributedFunction) not yet
// distributed (with its distribution argument, for $2 set), as fn.
const functionsNamed = `SELECT p.oid::regprocedure AS fn FROM pg_proc p
	WHERE p.proname = $1 AND p.pronamespace = current_schema()::regnamespace
	AND NOT EXISTS (SELECT FROM pg_dist_object o WHERE o.classid = 'pg_proc'::regclass AND o.objid = p.oid
		AND ($2::text IS NULL OR o.distribution_argument_index IS NOT NULL))`

// Citus reports whether the database behind pool has the citus extension
// (it is then a Citus coordinator, and Up distributes the tables). It fails
// only when the database cannot be asked.
func Citus(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	var citus bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')`).Scan(&citus); err != nil {
		return false, fmt.Errorf("migrations: citus: %w", err)
	}
	return citus, nil
}

// distribute makes the tables above distributed and reference tables when
// the database has the citus extension, and does nothing otherwise. It is
// idempotent: tables Citus already manages are left as they are, so it
// runs after every Up. It returns the first failure of Citus' functions.
func distribute(ctx context.Context, pool *pgxpool.Pool) error {
	citus, err := Citus(ctx, pool)
	if err != nil || !citus {
		return err
	}
	// One process at a time (Up runs concurrently in several processes):
	// the checks below then see what the other did.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrations: citus: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('invoiced.distribute'))`); err != nil {
		return fmt.Errorf("migrations: citus: lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext('invoiced.distribute'))`)
	}()
	reset, err := distributeSettings(ctx, conn)
	defer reset()
	if err != nil {
		return err
	}
	if err := createReferenceTables(ctx, conn); err != nil {
		return err
	}
	if err := distributeUncolocatedFunctions(ctx, conn); err != nil {
		return err
	}
	if err := distributeTables(ctx, conn); err != nil {
		return err
	}
	return colocateDelegatedFunctions(ctx, conn)
}

// distributeSettings sets the session settings distributing needs on
// conn. It returns the function that resets those it set (to be called
// even when it fails), and fails when a SET fails.
func distributeSettings(ctx context.Context, conn *pgxpool.Conn) (reset func(), err error) {
	var resets []string
	reset = func() {
		for _, r := range slices.Backward(resets) {
			_, _ = conn.Exec(context.WithoutCancel(ctx), r)
		}
	}
	// Not the default's Citus local tables for the tables that refer to
	// the reference tables: Citus cannot turn those into distributed
	// tables later when they have identity columns. Distributing them
	// below checks their keys to the reference tables.
	if _, err := conn.Exec(ctx, `SET citus.enable_local_reference_table_foreign_keys = off`); err != nil {
		return reset, fmt.Errorf("migrations: citus: %w", err)
	}
	resets = append(resets, `RESET citus.enable_local_reference_table_foreign_keys`)
	// series_counters' lease guard (00015) is a trigger that reads
	// series_leases of the same seller, a co-located shard on the same
	// worker; Citus calls such triggers unsafe and refuses to distribute a
	// table with one unless told (docs/scale-out.md, "Leases").
	if _, err := conn.Exec(ctx, `SET citus.enable_unsafe_triggers = on`); err != nil {
		return reset, fmt.Errorf("migrations: citus: %w", err)
	}
	resets = append(resets, `RESET citus.enable_unsafe_triggers`)
	return reset, nil
}

// citusManages reports whether Citus manages table the way method and
// repmodel say: partmethod 'h' is hash-distributed, 'n' with repmodel 't' a
// reference table (repmodel "" matches any). A table with a foreign key to
// a reference table becomes a Citus local table ('n', 's') on its own,
// which distribute converts. It fails with the database's error.
func citusManages(ctx context.Context, conn *pgxpool.Conn, table, method, repmodel string) (bool, error) {
	var ok bool
	err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_dist_partition WHERE logicalrelid = $1::regclass
		AND partmethod = $2 AND ($3 = '' OR repmodel = $3))`, table, method, repmodel).Scan(&ok)
	return ok, err
}

// createReferenceTables makes each of referenceTables a reference table,
// unless it is one already. It fails with the first table Citus refused.
func createReferenceTables(ctx context.Context, conn *pgxpool.Conn) error {
	for _, t := range referenceTables {
		ok, err := citusManages(ctx, conn, t, "n", "t")
		if err == nil && !ok {
			_, err = conn.Exec(ctx, `SELECT create_reference_table($1)`, t)
		}
		if err != nil {
			return fmt.Errorf("migrations: citus: reference table %s: %w%s", t, err, detail(err))
		}
	}
	return nil
}

// distributeUncolocatedFunctions distributes the functions of
// distributedFunctions that take no distribution argument (those that do
// are co-located with series, after the tables). It fails with the first
// function Citus refused.
func distributeUncolocatedFunctions(ctx context.Context, conn *pgxpool.Conn) error {
	for _, f := range distributedFunctions {
		if f.arg != "" {
			continue
		}
		_, err := conn.Exec(ctx, `SELECT create_distributed_function(f.fn) FROM (`+functionsNamed+`) f`, f.name, nil)
		if err != nil {
			return fmt.Errorf("migrations: citus: function %s: %w", f.name, err)
		}
	}
	return nil
}

// distributeTables distributes each of distributedTables by seller_id,
// co-located with the first, unless Citus distributes it already. It
// fails with the first table Citus refused.
func distributeTables(ctx context.Context, conn *pgxpool.Conn) error {
	for i, t := range distributedTables {
		ok, err := citusManages(ctx, conn, t, "h", "")
		if err == nil && !ok {
			with := distributedTables[0]
			if i == 0 {
				with = "default"
			}
			err = distributeTable(ctx, conn.Conn(), t, with)
		}
		if err != nil {
			return fmt.Errorf("migrations: citus: distribute %s: %w%s", t, err, detail(err))
		}
	}
	return nil
}

// colocateDelegatedFunctions distributes the functions of
// distributedFunctions that take a distribution argument, co-located with
// series; they come last, after the table they follow. One distributed
// earlier without its argument is distributed again, with it. It fails
// with the first function Citus refused.
func colocateDelegatedFunctions(ctx context.Context, conn *pgxpool.Conn) error {
	for _, f := range distributedFunctions {
		if f.arg == "" {
			continue
		}
		_, err := conn.Exec(ctx, `SELECT create_distributed_function(f.fn, $2, colocate_with => 'series') FROM (`+functionsNamed+`) f`, f.name, f.arg)
		if err != nil {
			return fmt.Errorf("migrations: citus: function %s: %w", f.name, err)
		}
	}
	return nil
}

// guardsOff lists, per distributed table, the triggers that must not fire
// while Citus copies the table's existing rows into its shards: the lease
// guard (00015) checks every inserted counter row against series_leases,
// which is not yet distributed when series_counters is (the trigger then
// fails on the worker: relation "series_leases" does not exist), and which
// would refuse the copy of a series leased to an offline device. The copy
// re-inserts rows that were written under the guard already.
var guardsOff = map[string][]string{"series_counters": {"series_counters_lease_guard"}}

// distributeTable distributes table by seller_id, co-located with with, in
// one transaction that turns the table's guardsOff triggers off for the
// copy of its rows and on again, on the shards too (Citus propagates the
// ALTER), before it commits: a failure leaves the table local with its
// triggers on. It returns the first failure.
func distributeTable(ctx context.Context, conn *pgx.Conn, table, with string) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// A table that already holds rows (an existing database moving to
		// Citus, docs/scale-out.md) is copied into its shards; Citus
		// refused to do that in parallel for series_counters ("cannot
		// execute parallel DDL … after DDL command on reference table
		// sellers"), so the transaction uses one connection per worker.
		if _, err := tx.Exec(ctx, `SET LOCAL citus.multi_shard_modify_mode = 'sequential'`); err != nil {
			return err
		}
		guards := func(action string) error { // DISABLE or ENABLE
			for _, g := range guardsOff[table] {
				if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s %s TRIGGER %s`,
					pgx.Identifier{table}.Sanitize(), action, pgx.Identifier{g}.Sanitize())); err != nil {
					return err
				}
			}
			return nil
		}
		if err := guards("DISABLE"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT create_distributed_table($1, 'seller_id', colocate_with => $2)`, table, with); err != nil {
			return err
		}
		return guards("ENABLE")
	})
}

// citusPending returns the tables of the lists above that Citus does not
// manage yet although the citus extension exists (none when it does not):
// a database whose move to Citus is not finished (docs/scale-out.md), which
// invoiced must not serve in either mode. It fails when the database
// cannot be asked.
func citusPending(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	citus, err := Citus(ctx, pool)
	if err != nil || !citus {
		return nil, err
	}
	rows, err := pool.Query(ctx, `SELECT t FROM unnest($1::text[]) t
		WHERE NOT EXISTS (SELECT FROM pg_dist_partition p WHERE p.logicalrelid = t::regclass)`,
		append(slices.Clone(distributedTables), referenceTables...))
	if err != nil {
		return nil, fmt.Errorf("migrations: citus: %w", err)
	}
	pending, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("migrations: citus: %w", err)
	}
	return pending, nil
}

// detail returns the detail and hint of a server error (Citus explains its
// refusals there), prefixed for appending to the message, or "".
func detail(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return ""
	}
	out := ""
	if pe.Detail != "" {
		out += " (" + pe.Detail + ")"
	}
	if pe.Hint != "" {
		out += " (hint: " + pe.Hint + ")"
	}
	return out
}

// checkDistributed returns an error that says to run migrate when the
// database has the citus extension but tables Citus does not manage yet
// (see citusPending), and the failure to ask.
func checkDistributed(ctx context.Context, pool *pgxpool.Pool) error {
	pending, err := citusPending(ctx, pool)
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		return fmt.Errorf("the database has the citus extension but tables Citus does not manage yet (%s): run `invoiced migrate` to distribute them (docs/scale-out.md, moving an existing database)", strings.Join(pending, ", "))
	}
	return nil
}
