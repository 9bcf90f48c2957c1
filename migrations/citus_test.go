package migrations_test

import (
	"slices"
	"testing"

	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/migrations"
)

// TestSellerOwnedTablesAreListed checks the migrated schema against the
// Citus lists (citus.go), on plain PostgreSQL as on Citus: every table is
// in exactly one list, every table with a seller_id is distributed or a
// reference table, every primary and unique key of a distributed table
// includes seller_id, and every foreign key of a distributed table points
// at a reference table or, naming seller_id, at a distributed table listed
// before it. A new seller-owned table that is not listed, or a key without
// the seller, fails here before Citus refuses it. Every table Citus
// manages has a replica identity, so that its shards can move.
func TestSellerOwnedTablesAreListed(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	listed := map[string]string{}
	for kind, tables := range map[string][]string{"distributed": migrations.DistributedTables,
		"reference": migrations.ReferenceTables, "coordinator": migrations.CoordinatorTables} {
		for _, table := range tables {
			if other, ok := listed[table]; ok {
				t.Errorf("table %s is listed as %s and as %s", table, other, kind)
			}
			listed[table] = kind
		}
	}
	rows, err := pool.Query(ctx, `SELECT c.relname, EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid
		AND a.attname = 'seller_id' AND NOT a.attisdropped)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for rows.Next() {
		var table string
		var hasSeller bool
		if err := rows.Scan(&table, &hasSeller); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, table)
		kind, ok := listed[table]
		switch {
		case !ok:
			t.Errorf("table %s is in no list of migrations/citus.go", table)
		case hasSeller && kind == "coordinator":
			t.Errorf("table %s has a seller_id but stays on the coordinator", table)
		case kind == "distributed" && !hasSeller:
			t.Errorf("distributed table %s has no seller_id", table)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for table := range listed {
		if !slices.Contains(seen, table) {
			t.Errorf("listed table %s does not exist", table)
		}
	}

	// Unique indexes (keys, constraints or not) of distributed tables
	// without seller_id.
	rows, err = pool.Query(ctx, `SELECT i.indrelid::regclass::text, i.indexrelid::regclass::text
		FROM pg_index i
		WHERE i.indisunique AND i.indrelid::regclass::text = ANY($1)
		AND NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = i.indrelid AND a.attname = 'seller_id'
			AND a.attnum = ANY (i.indkey))`, migrations.DistributedTables)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var table, index string
		if err := rows.Scan(&table, &index); err != nil {
			t.Fatal(err)
		}
		t.Errorf("unique index %s of distributed table %s does not include seller_id", index, table)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	// A replica identity for every table Citus manages: its shards move
	// between workers by logical replication (docs/scale-out.md, "Adding
	// workers later"), which cannot carry an UPDATE or DELETE of a table
	// without one, and Citus refuses to move such a shard group.
	rows, err = pool.Query(ctx, `SELECT c.relname FROM pg_class c
		WHERE c.relname = ANY($1) AND c.relnamespace = 'public'::regnamespace
		AND NOT (c.relreplident = 'f'
			OR (c.relreplident = 'i' AND EXISTS (SELECT FROM pg_index i WHERE i.indrelid = c.oid AND i.indisreplident))
			OR (c.relreplident = 'd' AND EXISTS (SELECT FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'p')))`,
		append(slices.Clone(migrations.DistributedTables), migrations.ReferenceTables...))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var table string
		if err := rows.Scan(&table); err != nil {
			t.Fatal(err)
		}
		t.Errorf("table %s has no replica identity (no primary key, no REPLICA IDENTITY USING INDEX)", table)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	// Foreign keys of distributed tables.
	rows, err = pool.Query(ctx, `SELECT c.conname, c.conrelid::regclass::text, c.confrelid::regclass::text,
		EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.conrelid AND a.attname = 'seller_id' AND a.attnum = ANY (c.conkey))
		FROM pg_constraint c WHERE c.contype = 'f' AND c.conrelid::regclass::text = ANY($1)`, migrations.DistributedTables)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var fks int
	for rows.Next() {
		var name, from, to string
		var withSeller bool
		if err := rows.Scan(&name, &from, &to, &withSeller); err != nil {
			t.Fatal(err)
		}
		fks++
		switch listed[to] {
		case "reference":
		case "distributed":
			if !withSeller {
				t.Errorf("foreign key %s of %s to distributed %s does not name seller_id", name, from, to)
			}
			if slices.Index(migrations.DistributedTables, to) >= slices.Index(migrations.DistributedTables, from) {
				t.Errorf("foreign key %s: %s is distributed before the table it references, %s", name, from, to)
			}
		default:
			t.Errorf("foreign key %s of distributed %s points at %s, which is neither distributed nor a reference table", name, from, to)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if fks == 0 {
		t.Fatal("no foreign keys of distributed tables found: the query is wrong")
	}
	rows.Close()

	// On Citus (make test-citus), Up has distributed them: one co-location
	// group for the seller-owned tables, the reference tables replicated.
	var citus bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')`).Scan(&citus); err != nil {
		t.Fatal(err)
	}
	if !citus {
		return
	}
	var distributed, groups, reference int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE partmethod = 'h'), count(DISTINCT colocationid) FILTER (WHERE partmethod = 'h'),
		count(*) FILTER (WHERE partmethod = 'n' AND repmodel = 't')
		FROM pg_dist_partition WHERE logicalrelid::text = ANY($1) OR logicalrelid::text = ANY($2)`,
		migrations.DistributedTables, migrations.ReferenceTables).Scan(&distributed, &groups, &reference); err != nil {
		t.Fatal(err)
	}
	if distributed != len(migrations.DistributedTables) || groups != 1 || reference != len(migrations.ReferenceTables) {
		t.Fatalf("on Citus: %d distributed tables in %d co-location groups, %d reference tables; want %d in 1, %d",
			distributed, groups, reference, len(migrations.DistributedTables), len(migrations.ReferenceTables))
	}
}

// TestEveryTableHasAPrimaryKey: every table of the migrated schema has a
// primary key (series had none from 00020 to 00024), and a distributed
// table's carries seller_id, which Citus needs of every unique key.
func TestEveryTableHasAPrimaryKey(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	rows, err := pool.Query(t.Context(), `SELECT c.relname,
			(SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_index i
			 JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
			 WHERE i.indrelid = c.oid AND i.indisprimary)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string][]string{}
	for rows.Next() {
		var table string
		var cols []string
		if err := rows.Scan(&table, &cols); err != nil {
			t.Fatal(err)
		}
		keys[table] = cols
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for table, cols := range keys {
		switch {
		case len(cols) == 0:
			t.Errorf("table %s has no primary key", table)
		case slices.Contains(migrations.DistributedTables, table) && !slices.Contains(cols, "seller_id"):
			t.Errorf("the primary key of distributed table %s is %v, without seller_id", table, cols)
		}
	}
	if got := keys["series"]; !slices.Equal(got, []string{"id", "seller_id"}) {
		t.Errorf("the primary key of series is %v, want (id, seller_id)", got)
	}
}
