package main

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/freetext"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/migrations"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
)

// cliError is an application error shown to the operator: its text is the
// error's client sentence (apperr.MessageOf) prefixed with the command, and
// it still unwraps to the original error for errors.Is.
type cliError struct {
	op  string
	err error
}

// Error returns "op: sentence".
func (e *cliError) Error() string { return e.op + ": " + apperr.MessageOf(e.err) }

// Unwrap returns the original error.
func (e *cliError) Unwrap() error { return e.err }

// explain returns err prefixed with op. Coded application errors (invalid
// GSTIN, duplicate series, …) show only their sentence; internal errors keep
// their full chain, which an operator needs to diagnose them. It returns nil
// for a nil err.
func explain(op string, err error) error {
	if err == nil {
		return nil
	}
	if apperr.KindOf(err) != apperr.Internal {
		return &cliError{op: op, err: err}
	}
	return fmt.Errorf("%s: %w", op, err)
}

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

// runSellers dispatches `invoiced sellers add|update|list`.
func runSellers(ctx context.Context, e env, args []string) error {
	return dispatch(ctx, e, "sellers", args, []subcommand{
		{"add", runSellersAdd},
		{"update", runSellersUpdate},
		{"list", runSellersList},
	})
}

// runSellersAdd registers a seller and prints it as one sellers-list row. It
// fails with the validation sentence for an invalid GSTIN, name or contact,
// and when the GSTIN is already registered.
func runSellersAdd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "sellers add", "--gstin GSTIN --name NAME [--address TEXT] [--phone P] [--email E]")
	gstin := fs.String("gstin", "", "the seller's GSTIN (15 characters, check character verified) (required)")
	name := fs.String("name", "", "the seller's legal or trade name (required)")
	address := fs.String("address", "", "the seller's address, one line, printed on receipts (Rule 46)")
	phone := fs.String("phone", "", "phone number printed on receipts (optional)")
	email := fs.String("email", "", "e-mail address printed on receipts (optional)")
	if err := parseFlags(fs, args, "gstin", "name"); err != nil {
		return err
	}
	// Validate before touching the database, so a typo is reported even
	// without one.
	if _, err := series.ParseGSTIN(*gstin); err != nil {
		return explain("sellers add", err)
	}
	c := series.Contact{Address: strings.TrimSpace(*address), Phone: strings.TrimSpace(*phone), Email: strings.TrimSpace(*email)}
	if err := series.CheckContact(c); err != nil {
		return explain("sellers add", err)
	}
	pool, err := openPool(ctx, e.getenv)
	if err != nil {
		return err
	}
	defer pool.Close()
	s, err := series.CreateSellerWith(ctx, pool, *gstin, strings.TrimSpace(*name), c)
	if err != nil {
		return explain("sellers add", err)
	}
	writeSellers(e, []series.Seller{s})
	return nil
}

// runSellersUpdate changes the name or contact of the seller with --gstin
// (only the flags given) and prints it as one sellers-list row. It fails
// with the validation sentence for an invalid value, and when the seller is
// unknown.
func runSellersUpdate(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "sellers update", "--gstin GSTIN [--name NAME] [--address TEXT] [--phone P] [--email E]")
	gstin := fs.String("gstin", "", "the seller's GSTIN (required)")
	fs.String("name", "", "the new name")
	fs.String("address", "", "the new address (\"\" clears it)")
	fs.String("phone", "", "the new phone (\"\" clears it)")
	fs.String("email", "", "the new e-mail (\"\" clears it)")
	if err := parseFlags(fs, args, "gstin"); err != nil {
		return err
	}
	var u series.SellerUpdate
	given := 0
	fs.Visit(func(f *flag.Flag) {
		v := strings.TrimSpace(f.Value.String())
		switch f.Name {
		case "name":
			u.Name = &v
		case "address":
			u.Address = &v
		case "phone":
			u.Phone = &v
		case "email":
			u.Email = &v
		default:
			return
		}
		given++
	})
	if given == 0 {
		return usageErrorf("sellers update: give at least one of --name, --address, --phone, --email")
	}
	if _, err := series.ParseGSTIN(*gstin); err != nil {
		return explain("sellers update", err)
	}
	pool, err := openPool(ctx, e.getenv)
	if err != nil {
		return err
	}
	defer pool.Close()
	s, err := series.UpdateSeller(ctx, pool, *gstin, u)
	if err != nil {
		return explain("sellers update", err)
	}
	writeSellers(e, []series.Seller{s})
	return nil
}

// runSellersList prints every seller, one per line, under a header:
// ID, GSTIN, STATE, NAME. It fails when the database is unreachable.
func runSellersList(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "sellers list", "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	pool, err := openPool(ctx, e.getenv)
	if err != nil {
		return err
	}
	defer pool.Close()
	ss, err := series.Sellers(ctx, pool)
	if err != nil {
		return explain("sellers list", err)
	}
	writeSellers(e, ss)
	return nil
}

// writeSellers prints sellers as an aligned table on stdout.
func writeSellers(e env, ss []series.Seller) {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tGSTIN\tSTATE\tNAME\tADDRESS\tPHONE\tEMAIL")
	for _, s := range ss {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.GSTIN, s.StateCode, freetext.Visible(s.Name), freetext.Visible(s.Address), s.Phone, s.Email)
	}
	tw.Flush()
}

// runSeries dispatches `invoiced series add|list`.
func runSeries(ctx context.Context, e env, args []string) error {
	return dispatch(ctx, e, "series", args, []subcommand{
		{"add", runSeriesAdd},
		{"list", runSeriesList},
	})
}

// runSeriesAdd creates a numbering series for the seller with --gstin and
// prints it as one series-list row. It fails when the seller is unknown, a
// value is invalid, the code is taken, or the format overlaps another series
// of the seller.
func runSeriesAdd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "series add", "--gstin GSTIN --code CODE --format FORMAT [--doc-type invoice] [--shop LABEL] [--opening-fy 2026-27 --opening-last-serial N --opening-last-date YYYY-MM-DD --opening-last-number NUMBER]")
	gstin := fs.String("gstin", "", "GSTIN of the seller that owns the series (required)")
	code := fs.String("code", "", "series code, unique per seller, e.g. CH1 (required)")
	docType := fs.String("doc-type", "invoice", "document type: invoice, bill_of_supply, credit_note, debit_note, receipt_voucher, payment_voucher, refund_voucher, delivery_challan, …")
	format := fs.String("format", "", "number format, e.g. 'CH1/{FY}/{SEQ:5}' (required)")
	shop := fs.String("shop", "", "free-text shop or counter label")
	opFY := fs.String("opening-fy", "", "moving here mid-year: the financial year of the opening (with the three below)")
	opSerial := fs.Int64("opening-last-serial", 0, "the last serial issued before invoiced in that year")
	opDate := fs.String("opening-last-date", "", "the date of that last invoice, YYYY-MM-DD")
	opNumber := fs.String("opening-last-number", "", "the number of that last invoice, as the format renders it")
	if err := parseFlags(fs, args, "gstin", "code", "format", "doc-type"); err != nil {
		return err
	}
	var op *invoice.Opening
	if *opFY != "" || *opSerial != 0 || *opDate != "" || *opNumber != "" {
		if *opFY == "" || *opSerial == 0 || *opDate == "" || *opNumber == "" {
			return usageErrorf("series add: an opening needs all of --opening-fy, --opening-last-serial, --opening-last-date and --opening-last-number")
		}
		fy, err := series.ParseFY(*opFY)
		if err != nil {
			return explain("series add", err)
		}
		d, err := series.ParseDate(*opDate)
		if err != nil {
			return explain("series add", err)
		}
		op = &invoice.Opening{FY: fy, LastSerial: *opSerial, LastInvoiceDate: d, LastNumber: *opNumber}
	}
	pool, seller, err := openSeller(ctx, e, "series add", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	var s series.Series
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		s, err = series.CreateSeriesTx(ctx, tx, series.NewSeries{
			SellerID: seller.ID, Code: *code, DocType: *docType, Format: *format, Shop: *shop,
		})
		if err != nil || op == nil {
			return err
		}
		_, err = invoice.DeclareOpeningTx(ctx, tx, seller, s, *op, "cli", time.Now())
		return err
	})
	if err != nil {
		return explain("series add", err)
	}
	if op != nil {
		fmt.Fprintf(e.stderr, "declared serials 1 to %d of %s as issued before invoiced; the next number is serial %d\n", op.LastSerial, op.FY, op.LastSerial+1)
	}
	writeSeries(e, []series.SeriesUsage{{Series: s}})
	return nil
}

// runSeriesList prints the series of the seller with --gstin under a header:
// CODE, DOC_TYPE, FORMAT, SHOP, USAGE (per financial year used, the last
// serial). It fails when the seller is unknown.
func runSeriesList(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "series list", "--gstin GSTIN")
	gstin := fs.String("gstin", "", "GSTIN of the seller (required)")
	if err := parseFlags(fs, args, "gstin"); err != nil {
		return err
	}
	pool, seller, err := openSeller(ctx, e, "series list", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	ss, err := series.List(ctx, pool, seller.ID)
	if err != nil {
		return explain("series list", err)
	}
	writeSeries(e, ss)
	return nil
}

// writeSeries prints series as an aligned table on stdout.
func writeSeries(e env, ss []series.SeriesUsage) {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CODE\tDOC_TYPE\tFORMAT\tSHOP\tUSAGE")
	for _, s := range ss {
		var usage []string
		for _, y := range s.Years {
			usage = append(usage, fmt.Sprintf("%s:%d", y.FY, y.LastSerial))
		}
		u := strings.Join(usage, ",")
		if u == "" {
			u = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Code, s.DocType, s.Format, freetext.Visible(s.Shop), u)
	}
	tw.Flush()
}

// runKeys dispatches `invoiced keys add|list|revoke`.
func runKeys(ctx context.Context, e env, args []string) error {
	return dispatch(ctx, e, "keys", args, []subcommand{
		{"add", runKeysAdd},
		{"list", runKeysList},
		{"revoke", runKeysRevoke},
	})
}

// runKeysAdd creates an API key for the seller with --gstin and prints the
// key, alone, on stdout: it is shown once and stored only as a hash. It fails
// when the seller is unknown or a scope is not one of issue, read, manage.
func runKeysAdd(ctx context.Context, e env, args []string) error {
	all := []string{api.ScopeIssue, api.ScopeRead, api.ScopeManage}
	fs := newFlagSet(e, "keys add", "--gstin GSTIN --scopes "+strings.Join(all, ",")+" [--series CH1,CH2]")
	gstin := fs.String("gstin", "", "GSTIN of the seller the key acts for (required)")
	scopeList := fs.String("scopes", "", "comma-separated scopes from "+strings.Join(all, ", ")+" (required)")
	seriesList := fs.String("series", "", "comma-separated series codes the key is restricted to (issue and read only; one key per terminal); default every series")
	if err := parseFlags(fs, args, "gstin", "scopes"); err != nil {
		return err
	}
	var scopes []string
	for _, s := range strings.Split(*scopeList, ",") {
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "" {
			continue
		}
		if !slices.Contains(all, s) {
			return usageErrorf("keys add: unknown scope %q (want some of %s)", s, strings.Join(all, ", "))
		}
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	if len(scopes) == 0 {
		return usageErrorf("keys add: --scopes names no scope (want some of %s)", strings.Join(all, ", "))
	}
	pool, seller, err := openSeller(ctx, e, "keys add", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	var key string
	if strings.TrimSpace(*seriesList) != "" {
		key, err = api.CreateSeriesKey(ctx, pool, seller.ID, scopes, strings.Split(*seriesList, ","))
	} else {
		key, err = api.CreateKey(ctx, pool, seller.ID, scopes)
	}
	if err != nil {
		return explain("keys add", err)
	}
	fmt.Fprintln(e.stdout, key)
	return nil
}

// runKeysList prints the API keys of the seller with --gstin under a header:
// PREFIX, SCOPES, SERIES ("*" for every series), CREATED, STATUS (active,
// or revoked with its time). Secrets
// are never shown: they are not stored. It fails when the seller is unknown.
func runKeysList(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "keys list", "--gstin GSTIN")
	gstin := fs.String("gstin", "", "GSTIN of the seller (required)")
	if err := parseFlags(fs, args, "gstin"); err != nil {
		return err
	}
	pool, seller, err := openSeller(ctx, e, "keys list", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	keys, err := api.Keys(ctx, pool, seller.ID)
	if err != nil {
		return explain("keys list", err)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PREFIX\tSCOPES\tSERIES\tCREATED\tSTATUS")
	for _, k := range keys {
		status := "active"
		if k.RevokedAt != nil {
			status = "revoked " + k.RevokedAt.UTC().Format(time.RFC3339)
		}
		restricted := "*"
		if k.Series != nil {
			restricted = strings.Join(k.Series, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.Prefix, strings.Join(k.Scopes, ","), restricted,
			k.CreatedAt.UTC().Format(time.RFC3339), status)
	}
	tw.Flush()
	return nil
}

// runKeysRevoke revokes the API key with --prefix; requests with it get 401
// from then on. It fails when no key has that prefix.
func runKeysRevoke(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "keys revoke", "--prefix PREFIX")
	prefix := fs.String("prefix", "", "the key's public prefix (required)")
	if err := parseFlags(fs, args, "prefix"); err != nil {
		return err
	}
	pool, err := openPool(ctx, e.getenv)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := api.RevokeKey(ctx, pool, strings.TrimSpace(*prefix)); err != nil {
		return explain("keys revoke", err)
	}
	fmt.Fprintf(e.stdout, "revoked %s\n", strings.TrimSpace(*prefix))
	return nil
}

// runVersion prints the module version, VCS revision and Go version the
// binary was built with. It never fails except on a usage error.
func runVersion(_ context.Context, e env, args []string) error {
	fs := newFlagSet(e, "version", "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, versionString())
	return nil
}

// revision is the VCS revision when the linker sets it (make build does:
// -X main.revision=...). The Go toolchain stamps the revision itself only
// in a checkout whose .git is a folder, not in a git worktree or a source
// tree copied without .git (a Docker build context); the Makefile and
// deploy/Dockerfile pass it here instead.
var revision string

// versionString returns "invoiced VERSION (rev REV[+modified], committed
// DATE, GOVERSION)" from the build information embedded by the Go
// toolchain, or from revision when the toolchain recorded none.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "invoiced (unknown version)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var details []string
	var rev, at string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		rev, dirty = strings.CutSuffix(revision, "+modified")
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "+modified"
		}
		details = append(details, "rev "+rev)
	}
	if at != "" {
		if t, err := time.Parse(time.RFC3339, at); err == nil {
			at = t.UTC().Format("2006-01-02")
		}
		details = append(details, "committed "+at)
	}
	details = append(details, bi.GoVersion)
	return fmt.Sprintf("invoiced %s (%s)", v, strings.Join(details, ", "))
}
