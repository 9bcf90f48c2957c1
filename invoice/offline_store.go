package invoice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/jackc/pgx/v5"
)

// This file holds what a writer of invoices numbered elsewhere (package
// lease: the uploads of a device's offline numbering, docs/offline.md)
// queues inside its own transaction: the same invoice rows, chain records,
// cancels and events as an issue or a cancel here, so that the invoice row
// stays defined once (row_store.go).

// QueueIssued queues on b the insert of inv, numbered and sealed elsewhere,
// and of its issue record at chain position with hash; inv.ID is set when
// b's results are read. It fails only when inv's items or addresses do not
// marshal.
func QueueIssued(b *pgx.Batch, inv *document.Invoice, position int64, hash []byte) error {
	items, err := json.Marshal(inv.Items)
	if err != nil {
		return fmt.Errorf("invoice: items: %w", err)
	}
	sl := &document.Sealed{ItemsJSON: string(items), Money: document.MoneyOf(inv.Totals)}
	if sl.BuyerAddress, sl.ShipTo, err = document.AddressesJSON(inv.Buyer, inv.ShipTo); err != nil {
		return err
	}
	r := invoiceRowOf(inv, sl)
	b.Queue(invoiceOneSQL, invoiceValues.values(&r)...).QueryRow(func(row pgx.Row) error {
		return row.Scan(&inv.ID)
	})
	c := chainRow{sellerID: inv.SellerID, seriesID: inv.SeriesID, fy: int32(inv.FY), position: position, serial: inv.Serial, at: inv.IssuedAt, hash: hash}
	b.Queue(chainOneSQL, chainValues.values(&c)...)
	return nil
}

// QueueCancelled queues on b the cancel of stored invoice inv at at for
// reason, and its cancel record at chain position with hash. The caller
// holds the invoice's row lock and advances the chain's counter row.
func QueueCancelled(b *pgx.Batch, inv document.Invoice, at time.Time, reason string, position int64, hash []byte) {
	b.Queue(`UPDATE invoices SET status = 'cancelled', cancelled_at = $2, cancel_reason = $3 WHERE id = $1 AND seller_id = $4`, inv.ID, at, reason, inv.SellerID)
	b.Queue(`INSERT INTO chain_records (series_id, fy, position, kind, serial, recorded_at, hash, seller_id) VALUES ($1, $2, $3, 'cancel', $4, $5, $6, $7)`,
		inv.SeriesID, int(inv.FY), position, inv.Serial, at, hash, inv.SellerID)
}

// Events are the webhook events of one type a writer queues for one
// seller's invoices: none unless the seller has a live webhook subscribed
// to the type.
type Events struct {
	typ        string
	subscribed map[int64]bool
}

// QueueSubscribers queues on b the read of whether seller sellerID has a
// live webhook subscribed to events of type typ (EventIssued,
// EventCancelled), and returns the Events that the read fills when b's
// results are read.
func QueueSubscribers(b *pgx.Batch, sellerID int64, typ string) *Events {
	e := &Events{typ: typ, subscribed: map[int64]bool{}}
	queueSubscribed(b, []int64{sellerID}, typ, e.subscribed)
	return e
}

// Queue queues on b the events of invs (their ids known), at the time at
// gives each, and their deliveries, when the seller subscribes; it reports
// whether it queued anything.
func (e *Events) Queue(b *pgx.Batch, invs []*document.Invoice, at func(*document.Invoice) time.Time) bool {
	return queueEvents(b, invs, e.typ, at, e.subscribed)
}

// LockBySerialTx locks and returns the seller's invoice serial of series
// seriesID in fy inside tx; ErrNotFound when there is none.
func LockBySerialTx(ctx context.Context, tx pgx.Tx, sellerID, seriesID int64, fy gst.FY, serial int64) (document.Invoice, error) {
	inv, err := scanInvoice(tx.QueryRow(ctx, `SELECT `+invoiceCols+invoiceFrom+`WHERE i.seller_id = $1 AND i.series_id = $2 AND i.fy = $3 AND i.serial = $4 FOR UPDATE OF i`,
		sellerID, seriesID, int(fy), serial))
	if errors.Is(err, pgx.ErrNoRows) {
		return document.Invoice{}, ErrNotFound
	}
	if err != nil {
		return document.Invoice{}, translate(err, "lock invoice")
	}
	return inv, nil
}
