package offline

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
)

// Errors of Cancel.
var (
	// ErrUnknownInvoice is returned by Cancel for an invoice this
	// terminal did not number under its lease.
	ErrUnknownInvoice = errors.New("offline: no invoice of this lease has that serial or number")
	// ErrAlreadyCancelled is returned by Cancel for an invoice cancelled
	// before.
	ErrAlreadyCancelled = errors.New("offline: the invoice is already cancelled")
)

// invoiceKey names an invoice of the lease: its series-year and serial.
type invoiceKey struct {
	fy     gst.FY
	serial int64
}

// CancelReceipt is what Cancel returns once the cancellation is durable.
type CancelReceipt struct {
	Serial      int64
	Number      string
	FY          string
	CancelledAt time.Time
	Position    int64 // the cancel record's chain position
	ChainHash   string
}

// remember records di, numbered in fy (under the caller's key, "" for
// none) after chain head prev, as pending and cancellable.
func (t *Terminal) remember(fy gst.FY, di client.DeviceInvoice, key string, prev []byte) {
	k := invoiceKey{fy, di.Serial}
	t.invoices[k], t.byNumber[di.Number] = di, k
	if key != "" {
		t.keys[key] = k
	}
	t.queue = append(t.queue, pendingRecord{fy: fy, inv: di, prev: prev})
}

// Cancel cancels an invoice this terminal numbered under its lease and
// returns the receipt once the cancellation is in the journal and
// fsynced. ref is the invoice's number ("T07/26-27/00005") or its serial
// ("5") in the latest series-year numbered. The cancellation's time is
// the device clock's, never before the last invoice or cancellation
// (times never go back); its record (document.CancelOffline, the server's
// own code) takes the next position of the invoice's series-year chain,
// and the uploader sends it after that invoice. It fails with
// ErrUnknownInvoice, ErrAlreadyCancelled, ErrCancelRefused (the server
// refused its cancellation before), document.ErrInvalid for an empty
// or overlong reason (nothing journaled), ErrEndPending, ErrLeaseInDoubt,
// ErrEnded, or ErrBroken.
func (t *Terminal) Cancel(ref, reason string) (CancelReceipt, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.broken:
		return CancelReceipt{}, ErrBroken
	case t.ended:
		return CancelReceipt{}, ErrEnded
	case t.ending, t.pending != nil:
		return CancelReceipt{}, ErrEndPending
	case t.doubt:
		return CancelReceipt{}, ErrLeaseInDoubt
	}
	k, ok := t.find(ref)
	if !ok {
		return CancelReceipt{}, fmt.Errorf("%w: %q", ErrUnknownInvoice, ref)
	}
	if t.cancelled[k] {
		return CancelReceipt{}, fmt.Errorf("%w: %s", ErrAlreadyCancelled, t.invoices[k].Number)
	}
	if r, ok := t.refusedCancel(k); ok {
		return CancelReceipt{}, fmt.Errorf("%w: %s (%s)", ErrCancelRefused, r.Number, r.Reason)
	}
	di := t.invoices[k]
	inv, err := t.rebuild(k.fy, di)
	if err != nil {
		return CancelReceipt{}, err
	}
	at := t.now().UTC().Truncate(time.Microsecond)
	if at.Before(t.lastAt) {
		at = t.lastAt
	}
	y := t.year(k.fy)
	_, hash, err := document.CancelOffline(t.seller.GSTIN, inv, reason, at, y.length+1, y.head)
	if err != nil {
		return CancelReceipt{}, err
	}
	dc := client.DeviceCancel{FY: k.fy.String(), Position: y.length + 1, Serial: di.Serial, Number: di.Number,
		CancelledAt: document.Timestamp(at), Reason: reason, ChainHash: hex.EncodeToString(hash)}
	if err := t.write(record{Kind: "cancel", FY: dc.FY, Position: dc.Position, Cancel: &dc}); err != nil {
		return CancelReceipt{}, err
	}
	t.applyCancel(k, dc, hash, at)
	return CancelReceipt{Serial: di.Serial, Number: di.Number, FY: dc.FY, CancelledAt: at, Position: dc.Position, ChainHash: dc.ChainHash}, nil
}

// find returns the invoice ref names: a number, or a serial of the
// latest series-year.
func (t *Terminal) find(ref string) (invoiceKey, bool) {
	if k, ok := t.byNumber[strings.ToUpper(ref)]; ok {
		return k, true
	}
	serial, err := strconv.ParseInt(ref, 10, 64)
	if err != nil {
		return invoiceKey{}, false
	}
	k := invoiceKey{t.latestYear(), serial}
	_, ok := t.invoices[k]
	return k, ok
}

// rebuild returns the invoice di as numbered (amounts, items and fields as
// the server stores them), for its cancel record.
func (t *Terminal) rebuild(fy gst.FY, di client.DeviceInvoice) (document.Invoice, error) {
	inv, _, err := t.renumber(di, 0, nil)
	if err != nil {
		return document.Invoice{}, err
	}
	if inv.FY != fy || inv.Number != di.Number {
		return document.Invoice{}, fmt.Errorf("offline: invoice %s rebuilt as %s %s", di.Number, inv.FY, inv.Number)
	}
	return inv, nil
}

// renumber returns the invoice di numbered again, as Issue numbered it, at
// chain position pos after head, and its chain hash.
func (t *Terminal) renumber(di client.DeviceInvoice, pos int64, head []byte) (document.Invoice, []byte, error) {
	r, err := request(client.IssueRequest{Buyer: di.Buyer, ShipTo: di.ShipTo, PlaceOfSupply: di.PlaceOfSupply, Items: di.Items, Original: di.Original})
	if err != nil {
		return document.Invoice{}, nil, err
	}
	at, err := time.Parse(time.RFC3339Nano, di.IssuedAt)
	if err != nil {
		return document.Invoice{}, nil, err
	}
	r.InvoiceDate = gst.DateIST(at)
	return document.NumberOffline(t.seller, t.series, r, di.Serial, pos, head, at)
}

// applyCancel advances the chain of k's series-year with the cancel
// record dc and queues it for upload.
func (t *Terminal) applyCancel(k invoiceKey, dc client.DeviceCancel, hash []byte, at time.Time) {
	y := t.year(k.fy)
	t.queue = append(t.queue, pendingRecord{fy: k.fy, cancel: &dc, prev: y.head})
	y.length, y.head = dc.Position, hash
	if at.After(t.lastAt) {
		t.lastAt = at
	}
	t.cancelled[k] = true
}

// replayCancel applies a journaled cancellation to t's state.
func (t *Terminal) replayCancel(r record) error {
	if r.Cancel == nil {
		return errors.New("a cancel record without its cancellation")
	}
	fy, err := gst.ParseFY(r.Cancel.FY)
	if err != nil {
		return err
	}
	k := invoiceKey{fy, r.Cancel.Serial}
	if _, ok := t.invoices[k]; !ok || t.cancelled[k] {
		return fmt.Errorf("cancel of serial %d of %s: not an invoice of the journal, or cancelled twice", k.serial, fy)
	}
	if y := t.year(fy); r.Cancel.Position != y.length+1 {
		return fmt.Errorf("cancel at position %d does not follow %d", r.Cancel.Position, y.length)
	}
	h, err := hex.DecodeString(r.Cancel.ChainHash)
	if err != nil {
		return err
	}
	at, err := time.Parse(time.RFC3339Nano, r.Cancel.CancelledAt)
	if err != nil {
		return err
	}
	t.applyCancel(k, *r.Cancel, h, at)
	return nil
}

// Cancelled returns the numbers of the invoices this terminal cancelled.
func (t *Terminal) Cancelled() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.cancelled))
	for k := range t.cancelled {
		out = append(out, t.invoices[k].Number)
	}
	return out
}

// LastSerial returns the last serial of the latest series-year numbered
// (latestYear; 0 when none).
func (t *Terminal) LastSerial() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.years[t.latestYear()].last
}
