package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/invoiced/invoiced/einvoice/registration"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/freetext"
	"github.com/invoiced/invoiced/sellers"
	"strings"
	"text/tabwriter"
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
	if err := sellers.CheckContact(c); err != nil {
		return explain("sellers add", err)
	}
	pool, err := openPool(ctx, e.getenv)
	if err != nil {
		return err
	}
	defer pool.Close()
	s, err := sellers.CreateWith(ctx, pool, *gstin, strings.TrimSpace(*name), c)
	if err != nil {
		return explain("sellers add", err)
	}
	writeSellers(e, []gst.Seller{s})
	if c.Address == "" {
		fmt.Fprintf(e.stderr, "warning: seller %s has no address: its receipts lack the supplier's address that Rule 46(a) requires; add it with: invoiced sellers update --gstin %s --address '…'\n", s.GSTIN, s.GSTIN)
	}
	return nil
}

// runSellersUpdate changes the name, contact or postal address of the
// seller with --gstin (only the flags given), then turns e-invoicing on or
// off when --e-invoicing says so, and prints it as one sellers-list row. It
// fails with the validation sentence for an invalid value, when e-invoicing
// is turned on for a seller without a complete postal address, and when
// the seller is unknown.
func runSellersUpdate(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "sellers update", "--gstin GSTIN [--name NAME] [--address TEXT] [--phone P] [--email E] [--address-line1 L1 --address-line2 L2 --city C --pin P] [--e-invoicing on|off]")
	gstin := fs.String("gstin", "", "the seller's GSTIN (required)")
	fs.String("name", "", "the new name")
	fs.String("address", "", "the new one-line address printed on receipts (\"\" clears it); by default the postal address's parts, when they change")
	fs.String("phone", "", "the new phone (\"\" clears it)")
	fs.String("email", "", "the new e-mail (\"\" clears it)")
	fs.String("address-line1", "", "the postal address's first line: building, street (e-invoicing needs it)")
	fs.String("address-line2", "", "the postal address's second line: area, floor (optional)")
	fs.String("city", "", "the postal address's city, town or locality (e-invoicing needs it)")
	fs.String("pin", "", "the postal address's six-digit PIN (e-invoicing needs it)")
	eInvoicing := fs.String("e-invoicing", "", "on: register every B2B invoice and note of the seller at the IRP (docs/e-invoice.md; needs the postal address, and serve with --irp-url); off: stop registering those issued from now on")
	if err := parseFlags(fs, args, "gstin"); err != nil {
		return err
	}
	var u sellers.Changes
	given := 0
	fs.Visit(func(f *flag.Flag) {
		v := strings.TrimSpace(f.Value.String())
		target := map[string]**string{"name": &u.Name, "address": &u.Address, "phone": &u.Phone, "email": &u.Email,
			"address-line1": &u.Line1, "address-line2": &u.Line2, "city": &u.City, "pin": &u.PIN}[f.Name]
		if target != nil {
			*target = &v
			given++
		}
	})
	switch *eInvoicing {
	case "", "on", "off":
	default:
		return usageErrorf("sellers update: --e-invoicing takes on or off, not %q", *eInvoicing)
	}
	if given == 0 && *eInvoicing == "" {
		return usageErrorf("sellers update: give at least one of --name, --address, --phone, --email, --address-line1, --address-line2, --city, --pin, --e-invoicing")
	}
	if _, err := gst.ParseGSTIN(*gstin); err != nil {
		return explain("sellers update", err)
	}
	pool, err := openPool(ctx, e.getenv)
	if err != nil {
		return err
	}
	defer pool.Close()
	var s gst.Seller
	if given > 0 {
		if s, err = sellers.Update(ctx, pool, *gstin, u); err != nil {
			return explain("sellers update", err)
		}
	}
	if *eInvoicing != "" {
		if s, err = registration.SetEInvoicing(ctx, pool, *gstin, *eInvoicing == "on"); err != nil {
			return explain("sellers update", err)
		}
		if s.EInvoicing {
			fmt.Fprintf(e.stderr, "e-invoicing on for %s: its B2B invoices and notes issued from now on are registered at the IRP by serve, which needs --irp-url and the other --irp-* settings (check them with invoiced irp-check --gstin %s)\n", s.GSTIN, s.GSTIN)
		}
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
	ss, err := sellers.All(ctx, pool)
	if err != nil {
		return explain("sellers list", err)
	}
	writeSellers(e, ss)
	return nil
}

// writeSellers prints sellers as an aligned table on stdout.
func writeSellers(e env, ss []gst.Seller) {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tGSTIN\tSTATE\tNAME\tADDRESS\tPHONE\tEMAIL\tE-INVOICING")
	for _, s := range ss {
		onOff := "off"
		if s.EInvoicing {
			onOff = "on"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.GSTIN, s.StateCode, freetext.Visible(s.Name), freetext.Visible(s.Address), s.Phone, s.Email, onOff)
	}
	tw.Flush()
}
