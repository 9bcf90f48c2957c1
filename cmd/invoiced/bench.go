package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/invoiced/invoiced/internal/bench"
)

// runBench runs `invoiced bench` (issue 5): it parses args with
// bench.ParseFlagsOutput, takes the database from DATABASE_URL unless
// --database-url is given, and runs bench.Run. It returns flag.ErrHelp for
// -h, a *usageError for bad flags, an error wrapping bench.ErrNotContiguous
// when a numbering check failed, and any other error that stopped the run.
func runBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := bench.ParseFlagsOutput(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	if err != nil {
		return usageErrorf("%v", err)
	}
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = getenv("DATABASE_URL")
	}
	_, err = bench.Run(ctx, cfg, stdout, stderr)
	return err
}
