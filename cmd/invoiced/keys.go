package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/invoiced/invoiced/apikey"
)

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
	all := []string{apikey.ScopeIssue, apikey.ScopeRead, apikey.ScopeManage}
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
		key, err = apikey.CreateForSeries(ctx, pool, seller.ID, scopes, strings.Split(*seriesList, ","))
	} else {
		key, err = apikey.Create(ctx, pool, seller.ID, scopes)
	}
	if err != nil {
		return explain("keys add", err)
	}
	fmt.Fprintln(e.stdout, key)
	return nil
}

// keyLine is one key of `keys list --format json`: one JSON object per
// line, for scripts (scripts/run-demo), whose fields keep their names when
// the table gains a column. Series is null for a key of every series;
// RevokedAt is null while the key is active.
type keyLine struct {
	Prefix    string     `json:"prefix"`
	Scopes    []string   `json:"scopes"`
	Series    []string   `json:"series"`
	CreatedAt time.Time  `json:"created_at"`
	Status    string     `json:"status"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// runKeysList prints the API keys of the seller with --gstin: with
// --format text (the default) under a header PREFIX, SCOPES, SERIES ("*"
// for every series), CREATED, STATUS (active, or revoked with its time);
// with --format json one keyLine object per line. Secrets are never shown:
// they are not stored. It fails when the format or the seller is unknown.
func runKeysList(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "keys list", "--gstin GSTIN [--format text|json]")
	gstin := fs.String("gstin", "", "GSTIN of the seller (required)")
	format := fs.String("format", "text", "text (a table for people) or json (one object per key per line, for scripts: prefix, scopes, series, created_at, status, revoked_at)")
	if err := parseFlags(fs, args, "gstin"); err != nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return usageErrorf("keys list: --format %q must be text or json", *format)
	}
	pool, seller, err := openSeller(ctx, e, "keys list", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	keys, err := apikey.List(ctx, pool, seller.ID)
	if err != nil {
		return explain("keys list", err)
	}
	if *format == "json" {
		enc := json.NewEncoder(e.stdout)
		for _, k := range keys {
			line := keyLine{Prefix: k.Prefix, Scopes: k.Scopes, Series: k.Series, CreatedAt: k.CreatedAt.UTC(), Status: "active"}
			if k.RevokedAt != nil {
				at := k.RevokedAt.UTC()
				line.Status, line.RevokedAt = "revoked", &at
			}
			if err := enc.Encode(line); err != nil {
				return err
			}
		}
		return nil
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
	if err := apikey.Revoke(ctx, pool, strings.TrimSpace(*prefix)); err != nil {
		return explain("keys revoke", err)
	}
	fmt.Fprintf(e.stdout, "revoked %s\n", strings.TrimSpace(*prefix))
	return nil
}
