package main

import (
	"context"
	"fmt"

	"github.com/invoiced/invoiced/migrations"
)

// runMigrate applies pending migrations and prints "schema version N";
// each retry of a migration that waited for a lock longer than 1 s, and
// what blocked it, is printed to stderr (docs/operations.md, "Migrations").
// It fails when DATABASE_URL is unusable, an applied migration's text
// changed, or a migration fails (after its retries, naming the blocker).
func runMigrate(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "migrate", "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	pool, err := connect(ctx, e.getenv, 0, 0)
	if err != nil {
		return err
	}
	defer pool.Close()
	v, err := migrations.UpWith(ctx, pool, migrations.Options{Logf: func(format string, args ...any) {
		fmt.Fprintf(e.stderr, "invoiced migrate: "+format+"\n", args...)
	}})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "schema version %d\n", v)
	return nil
}
