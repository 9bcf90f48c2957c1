package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/invoice"
)

// runPeriods dispatches `invoiced periods lock|unlock|list`.
func runPeriods(ctx context.Context, e env, args []string) error {
	return dispatch(ctx, e, "periods", args, []subcommand{
		{"lock", runPeriodsLock},
		{"unlock", runPeriodsUnlock},
		{"list", runPeriodsList},
	})
}

// periodMonth validates the GSTIN and returns the month fp, or the
// validation sentence (checked before connecting).
func periodMonth(op, gstin, fp string) (document.Month, error) {
	if _, err := gst.ParseGSTIN(gstin); err != nil {
		return document.Month{}, explain(op, err)
	}
	m, err := document.ParseMonth(fp)
	if err != nil {
		return document.Month{}, explain(op, err)
	}
	return m, nil
}

// runPeriodsLock locks a month after its GSTR-1 is filed, as
// POST /v1/periods/{fp}/lock does, recorded as done by "cli". It fails with
// the validation sentence for a bad GSTIN or month or a month not ended.
func runPeriodsLock(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "periods lock", "--gstin GSTIN --fp MMYYYY")
	gstin := fs.String("gstin", "", "the seller's GSTIN (required)")
	fp := fs.String("fp", "", "the month whose GSTR-1 is filed, MMYYYY (required)")
	if err := parseFlags(fs, args, "gstin", "fp"); err != nil {
		return err
	}
	m, err := periodMonth("periods lock", *gstin, *fp)
	if err != nil {
		return err
	}
	pool, seller, err := openSeller(ctx, e, "periods lock", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	lock, created, err := invoice.LockPeriod(ctx, pool, seller, m, "cli", time.Now())
	if err != nil {
		return explain("periods lock", err)
	}
	if created {
		fmt.Fprintf(e.stdout, "locked %s (%s)\n", m, m.FP())
	} else {
		fmt.Fprintf(e.stdout, "%s was locked already, at %s by %s\n", m, lock.LockedAt.In(gst.IST).Format("2 Jan 2006 15:04 IST"), lock.LockedBy)
	}
	return nil
}

// runPeriodsUnlock unlocks a month; the reason is required and recorded
// with the time. Unlocking has no API route on purpose: reopening a filed
// month needs access to the server.
func runPeriodsUnlock(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "periods unlock", "--gstin GSTIN --fp MMYYYY --reason TEXT")
	gstin := fs.String("gstin", "", "the seller's GSTIN (required)")
	fp := fs.String("fp", "", "the month, MMYYYY (required)")
	reason := fs.String("reason", "", "why the filed month is reopened, recorded (required)")
	if err := parseFlags(fs, args, "gstin", "fp", "reason"); err != nil {
		return err
	}
	m, err := periodMonth("periods unlock", *gstin, *fp)
	if err != nil {
		return err
	}
	pool, seller, err := openSeller(ctx, e, "periods unlock", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := invoice.UnlockPeriod(ctx, pool, seller, m, "cli", *reason, time.Now()); err != nil {
		return explain("periods unlock", err)
	}
	fmt.Fprintf(e.stdout, "unlocked %s (%s); recorded with the reason\n", m, m.FP())
	return nil
}

// runPeriodsList prints the locked months, then every lock and unlock.
func runPeriodsList(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "periods list", "--gstin GSTIN")
	gstin := fs.String("gstin", "", "the seller's GSTIN (required)")
	if err := parseFlags(fs, args, "gstin"); err != nil {
		return err
	}
	if _, err := gst.ParseGSTIN(*gstin); err != nil {
		return explain("periods list", err)
	}
	pool, seller, err := openSeller(ctx, e, "periods list", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	locks, err := invoice.PeriodLocks(ctx, pool, seller.ID)
	if err != nil {
		return explain("periods list", err)
	}
	events, err := invoice.PeriodEvents(ctx, pool, seller.ID)
	if err != nil {
		return explain("periods list", err)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FP\tMONTH\tLOCKED AT (IST)\tBY")
	for _, l := range locks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.Month.FP(), l.Month, l.LockedAt.In(gst.IST).Format("2006-01-02 15:04"), l.LockedBy)
	}
	tw.Flush()
	if len(events) > 0 {
		fmt.Fprintln(e.stdout, "\nhistory:")
		tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		for _, ev := range events {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ev.At.In(gst.IST).Format("2006-01-02 15:04"), ev.Action, ev.Month.FP(), ev.By, ev.Reason)
		}
		tw.Flush()
	}
	return nil
}
