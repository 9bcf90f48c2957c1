package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
)

// offlineSale is what one offline sale printed: its number, known once the
// invoice is in the journal; or, with CancelledAt, one cancellation,
// printed once it is in the journal.
type offlineSale struct {
	Serial      int64  `json:"serial"`
	Number      string `json:"number"`
	FY          string `json:"fy"`
	IssuedAt    string `json:"issued_at,omitempty"`
	CancelledAt string `json:"cancelled_at,omitempty"`
}

// cancelReason is the reason of pos's cancellations.
const cancelReason = "customer returned the goods"

// cancelSale cancels the sale serial of the latest series-year when
// --cancel-every says so and prints the cancellation; one cancelled
// already (a run killed after journaling it) is not cancelled again.
func cancelSale(term *offline.Terminal, every int, serial int64, stdout io.Writer, asJSON bool) error {
	if every == 0 || serial == 0 || serial%int64(every) != 0 {
		return nil
	}
	c, err := term.Cancel(fmt.Sprint(serial), cancelReason)
	if errors.Is(err, offline.ErrAlreadyCancelled) || errors.Is(err, offline.ErrUnknownInvoice) {
		return nil // cancelled before, or numbered online before the lease
	}
	if err != nil {
		return err
	}
	printOffline(stdout, asJSON, offlineSale{Serial: c.Serial, Number: c.Number, FY: c.FY, CancelledAt: c.CancelledAt.UTC().Format(time.RFC3339Nano)})
	return nil
}

// printOffline prints one offline sale or cancellation: a line of plain
// text, or with asJSON one JSON object.
func printOffline(stdout io.Writer, asJSON bool, s offlineSale) {
	switch {
	case asJSON:
		b, _ := json.Marshal(s)
		fmt.Fprintf(stdout, "%s\n", b)
	case s.CancelledAt != "":
		fmt.Fprintf(stdout, "cancelled %s (serial %d, FY %s)\n", s.Number, s.Serial, s.FY)
	default:
		fmt.Fprintf(stdout, "sale %s (serial %d, FY %s)\n", s.Number, s.Serial, s.FY)
	}
}

// runOffline is pos --offline: one terminal that numbers its own invoices
// in the leased series on a journal (client/offline). A journal without a
// lease gets one first (--series to --device; the server must answer
// then). It sells until the journal holds --sales invoices, printing each
// sale once it is durable; a run killed at any point continues from the
// journal. --sales N makes N new sales; --until-total N instead sells
// until the journal holds N (a killed run then continues where it
// stopped). With --cancel-every N it cancels each sale whose serial is a
// multiple of N, offline too. With --upload it then uploads what is
// pending, reporting each attempt, and with --end it ends the lease.
func runOffline(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	c := client.New(cfg.url, cfg.key, client.WithBackoff(50*time.Millisecond, cfg.maxBackoff))
	term, err := offline.Open(cfg.journal, nil)
	if errors.Is(err, offline.ErrNoLease) {
		term.Close()
		l, lerr := leaseSeries(ctx, c, cfg, stderr)
		if lerr != nil {
			return lerr
		}
		term, err = offline.Create(cfg.journal, l, nil)
	}
	if err != nil {
		return err
	}
	defer term.Close()
	// A run killed between a sale and its cancellation cancels it now.
	if err := cancelSale(term, cfg.cancelEvery, term.LastSerial(), stdout, cfg.json); err != nil {
		return err
	}
	target := term.Numbered() + int64(cfg.sales) // --sales: this run's new sales
	if cfg.untilTotal > 0 {
		target = int64(cfg.untilTotal) // until the journal holds that many
	}
	start, sold := time.Now(), 0
	for i := term.Numbered(); i < target; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r, err := term.Issue(client.IssueRequest{Items: []client.ItemInput{{
			Description: fmt.Sprintf("Masala chai (offline sale %d)", i), HSN: "0902", Quantity: "2", UnitPrice: "10.00", GSTRate: "5",
		}}})
		if err != nil {
			return err
		}
		printOffline(stdout, cfg.json, offlineSale{Serial: r.Serial, Number: r.Number, FY: r.FY, IssuedAt: r.IssuedAt.UTC().Format(time.RFC3339Nano)})
		sold++
		if err := cancelSale(term, cfg.cancelEvery, r.Serial, stdout, cfg.json); err != nil {
			return err
		}
		if cfg.think > 0 {
			time.Sleep(cfg.think)
		}
	}
	fmt.Fprintf(stderr, "pos: %d offline sales in %v; the journal holds %d, %d not uploaded\n",
		sold, time.Since(start).Round(time.Millisecond), term.Numbered(), term.Pending())
	if !cfg.upload && !cfg.end {
		return nil
	}
	if err := upload(ctx, term, c, cfg, stderr); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, cfg.saleTimeout)
	defer cancel()
	if cfg.end {
		l, err := term.End(sctx, c)
		if err != nil {
			return fmt.Errorf("end lease: %w", err)
		}
		fmt.Fprintf(stderr, "pos: lease %s ended at serial %d of %s\n", l.LeaseID, l.EndSerial, l.EndFY)
	}
	return nil
}

// leaseSeries leases cfg.series[0] to cfg.device. A series the seller does
// not have yet is created first, as a till series of its own
// (CODE/{FY}/{SEQ:5}; a leased series is numbered by the device alone), and
// pos says so; when the key may not create series, the error names the
// command that does.
func leaseSeries(ctx context.Context, c *client.Client, cfg config, stderr io.Writer) (client.Lease, error) {
	code := cfg.series[0]
	lctx, cancel := context.WithTimeout(ctx, cfg.saleTimeout)
	defer cancel()
	l, err := c.Lease(lctx, code, cfg.device)
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Code != "series_not_found" {
		if err != nil {
			return l, fmt.Errorf("lease %s to %s: %w", code, cfg.device, err)
		}
		return l, nil
	}
	format := code + "/{FY}/{SEQ:5}"
	if _, err := c.CreateSeries(lctx, client.SeriesRequest{Code: code, DocType: "invoice", Format: format, Shop: "offline till " + cfg.device}); err != nil {
		return l, fmt.Errorf("series %s does not exist and this key cannot create it (%w); create it with: invoiced sellers list, then invoiced series add --gstin GSTIN --code %s --doc-type invoice --format '%s', or pass --series with an existing series of its own", code, err, code, format)
	}
	fmt.Fprintf(stderr, "pos: created series %s (%s) for this till\n", code, format)
	l, err = c.Lease(lctx, code, cfg.device)
	if err != nil {
		return l, fmt.Errorf("lease %s to %s: %w", code, cfg.device, err)
	}
	return l, nil
}

// upload sends what the journal holds pending, reporting on stderr what it
// does: each attempt is bounded (a quarter of --sale-timeout, 1 to 10 s),
// a failed one is reported with what is still pending and retried until
// --sale-timeout, and an answer that retrying cannot change (a refusal)
// ends it at once. It fails naming what is still pending.
func upload(ctx context.Context, term *offline.Terminal, c *client.Client, cfg config, stderr io.Writer) error {
	fmt.Fprintf(stderr, "pos: uploading %d pending to %s\n", term.Pending(), cfg.url)
	deadline := time.Now().Add(cfg.saleTimeout)
	each := min(max(cfg.saleTimeout/4, time.Second), 10*time.Second)
	total := 0
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, min(each, time.Until(deadline)))
		n, err := term.Sync(actx, c)
		cancel()
		total += n
		if err == nil {
			fmt.Fprintf(stderr, "pos: uploaded %d invoices and cancellations\n", total)
			return nil
		}
		retry := client.IsOutcomeUnknown(err) || errors.Is(err, context.DeadlineExceeded)
		if !retry || ctx.Err() != nil || time.Until(deadline) <= 0 {
			return fmt.Errorf("upload: %w (%d uploaded, %d still pending; run again with --upload)", err, total, term.Pending())
		}
		fmt.Fprintf(stderr, "pos: upload attempt %d: %v; %d uploaded, %d still pending; retrying until %s\n",
			attempt, err, total, term.Pending(), deadline.Format(time.TimeOnly))
	}
}
