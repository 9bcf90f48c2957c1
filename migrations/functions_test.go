package migrations_test

import (
	"slices"
	"testing"

	"github.com/invoiced/invoiced/internal/dbtest"
)

// planless are the invoiced_* functions that run no statement, so have no
// plan to cache, each with why; a GUC set on a function costs a save and a
// restore per call, and invoiced_require is called in every batch.
var planless = map[string]string{
	"invoiced_require": "it raises or returns true, and runs no statement",
}

// TestInvoicedFunctionsPlanWithTheirValues: every invoiced_* function of
// the migrated schema that runs statements says SET plan_cache_mode =
// force_custom_plan. On a
// Citus worker a generic plan of a statement that names its shard through
// a parameter grows the backend with every execution (00030,
// docs/scale-out.md), and a CREATE OR REPLACE that forgets the setting
// drops it; so the rule is held here, not in a migration's comment. The
// dead invoiced_issue_batch (00026, no binary that serves this schema
// calls it) is gone.
func TestInvoicedFunctionsPlanWithTheirValues(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	rows, err := pool.Query(t.Context(), `SELECT p.proname, coalesce(p.proconfig, '{}')
		FROM pg_proc p WHERE p.proname LIKE 'invoiced\_%' AND p.pronamespace = current_schema()::regnamespace
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		var config []string
		if err := rows.Scan(&name, &config); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		if _, ok := planless[name]; !ok && !slices.Contains(config, "plan_cache_mode=force_custom_plan") {
			t.Errorf("%s has settings %v: want SET plan_cache_mode = force_custom_plan", name, config)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no invoiced_* function in the schema")
	}
	if slices.Contains(names, "invoiced_issue_batch") {
		t.Error("invoiced_issue_batch is still in the schema: no binary that serves it calls it")
	}
	t.Logf("functions: %v", names)
}
