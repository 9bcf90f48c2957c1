// Command invoiced is the gap-free GST invoice numbering service: it migrates
// the database, manages sellers, series and API keys, and serves the HTTP API.
// Every subcommand reads DATABASE_URL. Run `invoiced help` for the list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// main runs the command line under a context cancelled by SIGINT or SIGTERM.
// It exits 0 on success, 2 for a usage error and 1 for any other error.
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, restore the default handling so that a second
	// one kills the process instead of waiting for the drain.
	go func() {
		<-ctx.Done()
		stop()
	}()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "invoiced: %v\n", err)
		var ue *usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// env carries what every subcommand needs from its surroundings, so that
// tests can run the command line in-process.
type env struct {
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
	// now is the clock of the commands that date what they record (a
	// lease's end or settlement); nil means time.Now. Tests whose data is
	// dated by a fixed clock set it, so that they do not depend on today.
	now func() time.Time
}

// clock returns the time by e's clock: e.now, else time.Now.
func (e env) clock() time.Time {
	if e.now != nil {
		return e.now()
	}
	return time.Now()
}

// command is one top-level subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

// commands returns the top-level subcommands, in the order usage lists them.
func commands() []command {
	return []command{
		{"migrate", "apply pending database migrations and print the schema version", runMigrate},
		{"sellers", "add, update or list sellers (GST registrations): sellers add|update|list", runSellers},
		{"series", "add or list numbering series of a seller: series add|list", runSeries},
		{"keys", "create, list or revoke API keys: keys add|list|revoke", runKeys},
		{"serve", "serve the HTTP API until SIGINT or SIGTERM, then drain and exit 0", runServe},
		{"report", "accountants' exports: report audit (csv|json|xlsx) | report gstr1-docs", runReport},
		{"verify", "check the hash chains, serials and counters of a seller; exit 0 only when intact", runVerify},
		{"periods", "lock a month after filing GSTR-1, unlock it (recorded) or list locks: periods lock|unlock|list", runPeriods},
		{"leases", "offline terminals' leases: leases list | end (lost device, by force) | settle (docs/offline.md)", runLeases},
		{"irp-sandbox", "serve a local e-invoice IRP (its own keys, faults on request) for tests and demos (docs/e-invoice.md)", runIRPSandbox},
		{"irp-check", "authenticate at the configured IRP as a GSTIN's API user: a check of the IRP settings", runIRPCheck},
		{"bench", "measure throughput and latency over HTTP against pgbench baselines, then check the serials", runBench},
		{"version", "print the module version, VCS revision and Go version (also --version)", runVersion},
	}
}

// run executes the command line args (without the program name) and returns
// nil on success. It returns a *usageError for an unknown command, a bad flag
// or a missing argument, and the subcommand's error otherwise. Help (`help`,
// `-h`, `--help`) prints the usage to stdout and returns nil.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := env{getenv: getenv, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		printUsage(stderr)
		return usageErrorf("no command given")
	}
	name, rest := args[0], args[1:]
	switch name {
	case "--version", "-version", "-v":
		return runVersion(ctx, e, rest)
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 {
			// `invoiced help serve` is `invoiced serve -h`.
			return run(ctx, []string{rest[0], "-h"}, getenv, stdout, stderr)
		}
		printUsage(stdout)
		return nil
	}
	for _, c := range commands() {
		if c.name == name {
			err := c.run(ctx, e, rest)
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return err
		}
	}
	printUsage(stderr)
	return usageErrorf("unknown command %q", name)
}

// printUsage writes the list of commands to w.
func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: invoiced COMMAND [FLAGS]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "  help        print this help; `invoiced help COMMAND` for a command's flags")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every command but irp-sandbox, irp-check and version reads DATABASE_URL (e.g. postgres://user@host:5432/invoiced).")
	fmt.Fprintln(w, "serve also takes each flag from INVOICED_<FLAG> (e.g. INVOICED_ADDR); a flag given wins.")
}

// usageError is a mistake in the command line: main exits 2 for it.
type usageError struct{ msg string }

// Error returns the description of the mistake.
func (e *usageError) Error() string { return e.msg }

// usageErrorf returns a *usageError with a formatted message.
func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// newFlagSet returns a FlagSet for the command `invoiced name` that reports
// its errors (and -h) on stderr and does not exit.
func newFlagSet(e env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("invoiced "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: invoiced %s %s\n", name, synopsis)
		var hasFlags bool
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			unwrap := unwrapDurations(fs)
			defer unwrap()
			fmt.Fprintln(fs.Output(), "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args with fs and checks that every flag named in
// required was given a non-empty value and that no positional arguments
// remain. It returns flag.ErrHelp for -h (the usage has been printed; run
// turns it into success), and a *usageError otherwise on failure.
func parseFlags(fs *flag.FlagSet, args []string, required ...string) error {
	name := strings.TrimPrefix(fs.Name(), "invoiced ")
	unwrap := wrapDurations(fs)
	err := fs.Parse(args)
	unwrap()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return flag.ErrHelp
		}
		// The FlagSet has already printed the error and the usage.
		return usageErrorf("%s: %v", name, err)
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usageErrorf("%s: unexpected argument %q", name, fs.Arg(0))
	}
	var missing []string
	for _, req := range required {
		if f := fs.Lookup(req); f != nil && strings.TrimSpace(f.Value.String()) == "" {
			missing = append(missing, "--"+req)
		}
	}
	if len(missing) > 0 {
		fs.Usage()
		plural := ""
		if len(missing) > 1 {
			plural = "s"
		}
		return usageErrorf("%s: missing required flag%s %s", name, plural, strings.Join(missing, ", "))
	}
	return nil
}

// subcommand is one subcommand of a command group such as `sellers`.
type subcommand struct {
	name string
	run  func(ctx context.Context, e env, args []string) error
}

// dispatch runs the subcommand of group named by args[0]. It returns a
// *usageError when the subcommand is missing or unknown.
func dispatch(ctx context.Context, e env, group string, args []string, subs []subcommand) error {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	list := strings.Join(names, "|")
	if len(args) == 0 {
		return usageErrorf("usage: invoiced %s %s", group, list)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(e.stdout, "Usage: invoiced %s %s\nRun `invoiced %s SUBCOMMAND -h` for its flags.\n", group, list, group)
		return nil
	}
	for _, s := range subs {
		if s.name == args[0] {
			return s.run(ctx, e, args[1:])
		}
	}
	return usageErrorf("unknown command %q for invoiced %s (want %s)", args[0], group, list)
}
