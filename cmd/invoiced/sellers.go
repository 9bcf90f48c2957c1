package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/freetext"
	"github.com/invoiced/invoiced/series"
)

// runSellers dispatches `invoiced sellers add|update|list`.
func runSellers(ctx context.Context, e env, args []string) error {
	return dispatch(ctx, e, "sellers", args, []subcommand{
		{"add", runSellersAdd},
		{"update", runSellersUpdate},
		{"list", runSellersList},
	})
}

// runSellersAdd registers a seller and prints it as one sellers-list row,
// with a warning on stderr when it has no address (Rule 46(a)). It
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
	if _, err := gst.ParseGSTIN(*gstin); err != nil {
		return explain("sellers add", err)
	}
	c := gst.Contact{Address: strings.TrimSpace(*address), Phone: strings.TrimSpace(*phone), Email: strings.TrimSpace(*email)}
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
	writeSellers(e, []gst.Seller{s})
	if c.Address == "" {
		fmt.Fprintf(e.stderr, "warning: seller %s has no address: its receipts lack the supplier's address that Rule 46(a) requires; add it with: invoiced sellers update --gstin %s --address '…'\n", s.GSTIN, s.GSTIN)
	}
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
	if _, err := gst.ParseGSTIN(*gstin); err != nil {
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
	writeSellers(e, []gst.Seller{s})
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
func writeSellers(e env, ss []gst.Seller) {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tGSTIN\tSTATE\tNAME\tADDRESS\tPHONE\tEMAIL")
	for _, s := range ss {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.GSTIN, s.StateCode, freetext.Visible(s.Name), freetext.Visible(s.Address), s.Phone, s.Email)
	}
	tw.Flush()
}
