package main

import (
	"context"
	"fmt"

	"github.com/invoiced/invoiced/migrations"
)

// runMigrate applies pending migrations and prints "schema version N". It
// fails when DATABASE_URL is unusable or a migration fails.
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
	v, err := migrations.Up(ctx, pool)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "schema version %d\n", v)
	return nil
}
