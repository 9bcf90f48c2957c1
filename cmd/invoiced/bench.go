package main

import (
	"context"
	"errors"
	"flag"

	"github.com/invoiced/invoiced/internal/bench"
)

// runBench runs `invoiced bench` (docs/bench.md): it parses args with
// bench.ParseFlagsOutput, takes the database from DATABASE_URL unless
// --database-url is given, and runs bench.Run. It returns flag.ErrHelp for
// -h, a *usageError for bad flags, an error wrapping bench.ErrNotContiguous
// when a numbering check failed, and any other error that stopped the run.
func runBench(ctx context.Context, e env, args []string) error {
	cfg, err := bench.ParseFlagsOutput(args, e.stderr)
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	if err != nil {
		return usageErrorf("%v", err)
	}
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = e.getenv("DATABASE_URL")
	}
	_, err = bench.Run(ctx, cfg, e.stdout, e.stderr)
	return err
}
