package main

import (
	"strings"
	"testing"

	"github.com/invoiced/invoiced/internal/dbtest"
)

// TestMeasurePublicIDs: the measurement loads and issues both forms, each
// id unique under its index, and reports both.
func TestMeasurePublicIDs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.New(t)
	var out strings.Builder
	if err := measurePublicIDs(ctx, pool, 3000, 450, 7, &out); err != nil {
		t.Fatal(err)
	}
	for _, f := range idForms {
		var rows, distinct, sellers int
		if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT public_id), count(DISTINCT seller_id) FROM pubid_`+f.name).Scan(&rows, &distinct, &sellers); err != nil {
			t.Fatal(err)
		}
		if rows != 3450 || distinct != rows || sellers != 7 {
			t.Fatalf("pubid_%s: %d rows, %d distinct ids, %d sellers; want 3450, 3450, 7", f.name, rows, distinct, sellers)
		}
		if !strings.Contains(out.String(), f.name+" ") || !strings.Contains(out.String(), "3000 ids") {
			t.Fatalf("report lacks %s:\n%s", f.name, out.String())
		}
	}
}
