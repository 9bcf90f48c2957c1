package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/lease"
	"github.com/invoiced/invoiced/series"
)

// runLeases dispatches `invoiced leases list|end|settle`: the operator's
// and accountant's side of offline terminals (docs/offline.md).
func runLeases(ctx context.Context, e env, args []string) error {
	return dispatch(ctx, e, "leases", args, []subcommand{
		{"list", runLeasesList},
		{"end", runLeasesEnd},
		{"settle", runLeasesSettle},
	})
}

// runLeasesList prints every lease of a series, oldest first, with what
// the server knows of each device: its last contact, its uploads in each
// year the lease reserves and its own last reported serial (what a
// settlement may declare no less than).
func runLeasesList(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "leases list", "--gstin GSTIN --series CODE")
	gstin := fs.String("gstin", "", "the seller's GSTIN (required)")
	code := fs.String("series", "", "the series (required)")
	if err := parseFlags(fs, args, "gstin", "series"); err != nil {
		return err
	}
	pool, seller, err := openSeller(ctx, e, "leases list", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	s, err := series.Get(ctx, pool, seller.ID, *code)
	if err != nil {
		return explain("leases list", err)
	}
	ls, err := lease.Leases(ctx, pool, s)
	if err != nil {
		return explain("leases list", err)
	}
	stored := map[gst.FY]int64{}
	for _, l := range ls {
		for _, y := range l.Years() {
			if _, ok := stored[y]; ok {
				continue
			}
			p, err := lease.NextPosition(ctx, pool, s, y)
			if err != nil {
				return explain("leases list", err)
			}
			stored[y] = p.Serial - 1
		}
	}
	ist := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.In(gst.IST).Format("2006-01-02 15:04")
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tLEASED (IST)\tFROM\tLAST CONTACT (IST)\tSTORED NOW\tREPORTED\tENDED (IST)\tHOW\tLAST SERIAL\tSETTLED (IST)\tREASON")
	for _, l := range ls {
		last := "-"
		if l.EndedAt != nil {
			last = fmt.Sprintf("%s %d", l.EndFY, l.EndSerial)
		}
		reason := l.EndReason
		if l.SettleReason != "" {
			reason += " / " + l.SettleReason
		}
		var now []string
		for _, y := range l.Years() {
			now = append(now, fmt.Sprintf("%s %d", y, stored[y]))
		}
		reported := "-"
		if l.ReportedSerial > 0 {
			reported = fmt.Sprintf("%s %d", l.ReportedFY, l.ReportedSerial)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.DeviceID, ist(&l.LeasedAt), l.Next.FY, l.Next.Serial,
			ist(l.LastContactAt), strings.Join(now, ", "), reported, ist(l.EndedAt), l.EndKind, last, ist(l.SettledAt), reason)
	}
	return tw.Flush()
}

// runLeasesEnd ends the lease of a lost device by force, recorded as done
// by "cli" with the reason.
func runLeasesEnd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "leases end", "--gstin GSTIN --series CODE --reason TEXT")
	gstin := fs.String("gstin", "", "the seller's GSTIN (required)")
	code := fs.String("series", "", "the leased series (required)")
	reason := fs.String("reason", "", "why the device's lease is ended without it, recorded (required)")
	if err := parseFlags(fs, args, "gstin", "series", "reason"); err != nil {
		return err
	}
	pool, seller, err := openSeller(ctx, e, "leases end", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	s, err := series.Get(ctx, pool, seller.ID, *code)
	if err != nil {
		return explain("leases end", err)
	}
	l, err := lease.ForceEndLease(ctx, pool, s, *reason, "cli", e.clock())
	if err != nil {
		return explain("leases end", err)
	}
	fmt.Fprintf(e.stdout, "ended %s's lease of %s by force at serial %d of %s (the last uploaded); settle it once the device uploads or with `leases settle`\n",
		l.DeviceID, s.Code, l.EndSerial, l.EndFY)
	return nil
}

// runLeasesSettle settles a lease ended by force: the last serial the lost
// device may have printed in each year the lease reserves (--years
// 2026-27:5,2027-28:0), with the reason. A serial below what the server
// knows (`leases list`: stored now, reported) is refused.
func runLeasesSettle(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "leases settle", "--gstin GSTIN --series CODE --years FY:SERIAL,FY:SERIAL --reason TEXT")
	gstin := fs.String("gstin", "", "the seller's GSTIN (required)")
	code := fs.String("series", "", "the series (required)")
	yearsFlag := fs.String("years", "", "the last serial the lost device may have printed in each year the lease reserves: 2026-27:5,2027-28:0 (required)")
	reason := fs.String("reason", "", "how that is known, recorded (required)")
	if err := parseFlags(fs, args, "gstin", "series", "years", "reason"); err != nil {
		return err
	}
	declared, err := parseYearsFlag(*yearsFlag)
	if err != nil {
		return fmt.Errorf("leases settle: --years: %w", err)
	}
	pool, seller, err := openSeller(ctx, e, "leases settle", *gstin)
	if err != nil {
		return err
	}
	defer pool.Close()
	s, err := series.Get(ctx, pool, seller.ID, *code)
	if err != nil {
		return explain("leases settle", err)
	}
	l, err := lease.SettleLeaseYears(ctx, pool, s, declared, *reason, "cli", e.clock(), invoice.DeclarationSeal(seller.GSTIN))
	if err != nil {
		return explain("leases settle", err)
	}
	for _, y := range l.Years() {
		if n, ok := l.DeclaredYears[y]; ok {
			fmt.Fprintf(e.stdout, "settled %s's lease of %s: it may have printed up to serial %d of %s; %s continues at %d\n",
				l.DeviceID, s.Code, n, y, y, n+1)
		}
	}
	return nil
}

// parseYearsFlag reads "2026-27:5,2027-28:2"; nil for "".
func parseYearsFlag(v string) (map[gst.FY]int64, error) {
	if v == "" {
		return nil, nil
	}
	out := map[gst.FY]int64{}
	for _, part := range strings.Split(v, ",") {
		fyText, nText, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("%q is not FY:SERIAL", part)
		}
		fy, err := gst.ParseFY(fyText)
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(nText, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: the serial must be 0 or more", part)
		}
		out[fy] = n
	}
	return out, nil
}
