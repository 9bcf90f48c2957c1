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
func cancelSale(term *offline.Terminal, every int, serial int64, stdout io.Writer) error {
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
	b, _ := json.Marshal(offlineSale{Serial: c.Serial, Number: c.Number, FY: c.FY, CancelledAt: c.CancelledAt.UTC().Format(time.RFC3339Nano)})
	fmt.Fprintf(stdout, "%s\n", b)
	return nil
}

// runOffline is pos --offline: one terminal that numbers its own invoices
// in the leased series on a journal (client/offline). A journal without a
// lease gets one first (--series to --device; the server must answer
// then). It sells until the journal holds --sales invoices, printing each
// sale once it is durable; a run killed at any point continues from the
// journal. With --cancel-every N it cancels each sale whose serial is a
// multiple of N, offline too. With --upload it then uploads what is pending, and with --end
// it ends the lease.
func runOffline(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	c := client.New(cfg.url, cfg.key, client.WithBackoff(50*time.Millisecond, cfg.maxBackoff))
	term, err := offline.Open(cfg.journal, nil)
	if errors.Is(err, offline.ErrNoLease) {
		term.Close()
		lctx, cancel := context.WithTimeout(ctx, cfg.saleTimeout)
		l, lerr := c.Lease(lctx, cfg.series[0], cfg.device)
		cancel()
		if lerr != nil {
			return fmt.Errorf("lease %s to %s: %w", cfg.series[0], cfg.device, lerr)
		}
		term, err = offline.Create(cfg.journal, l, nil)
	}
	if err != nil {
		return err
	}
	defer term.Close()
	// A run killed between a sale and its cancellation cancels it now.
	if err := cancelSale(term, cfg.cancelEvery, term.LastSerial(), stdout); err != nil {
		return err
	}
	start, sold := time.Now(), 0
	for i := term.Numbered(); i < int64(cfg.sales); i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r, err := term.Issue(client.IssueRequest{Items: []client.ItemInput{{
			Description: fmt.Sprintf("Masala chai (offline sale %d)", i), HSN: "0902", Quantity: "2", UnitPrice: "10.00", GSTRate: "5",
		}}})
		if err != nil {
			return err
		}
		b, _ := json.Marshal(offlineSale{Serial: r.Serial, Number: r.Number, FY: r.FY, IssuedAt: r.IssuedAt.UTC().Format(time.RFC3339Nano)})
		fmt.Fprintf(stdout, "%s\n", b)
		sold++
		if err := cancelSale(term, cfg.cancelEvery, r.Serial, stdout); err != nil {
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
	sctx, cancel := context.WithTimeout(ctx, cfg.saleTimeout)
	defer cancel()
	n, err := term.Sync(sctx, c)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	fmt.Fprintf(stderr, "pos: uploaded %d invoices and cancellations\n", n)
	if cfg.end {
		l, err := term.End(sctx, c)
		if err != nil {
			return fmt.Errorf("end lease: %w", err)
		}
		fmt.Fprintf(stderr, "pos: lease %s ended at serial %d of %s\n", l.LeaseID, l.EndSerial, l.EndFY)
	}
	return nil
}
