package offline

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
)

// A cancellation the server refuses for good (docs/offline.md, "What a
// lease-route answer lets the device conclude"): 409 period_locked, the
// invoice's month was locked (its GSTR-1 filed) between the cancel and its
// upload. Every later record of the year's chain was built on the cancel
// record's hash, so the terminal cannot upload them as they are, and the
// refusal is final (a locked month stays locked; the correction is a
// credit note). The terminal journals a "void" of the cancel: the invoice
// is not cancelled after all, and the records after it in that year's
// chain move down one position and are chained again (their numbers,
// contents and times unchanged; their chain hashes change), so that
// everything else uploads and the lease can end. The refusal is reported:
// Sync fails with a *CancelsRefusedError once, and RefusedCancels lists
// every one.

// ErrCancelRefused is returned by Cancel for an invoice whose
// cancellation the server refused (its month is locked): correct it with
// a credit note.
var ErrCancelRefused = errors.New("offline: the server refused this invoice's cancellation (its month is locked): issue a credit note")

// RefusedCancel is a cancellation the server refused because the
// invoice's month was locked: the invoice stands, uncancelled.
type RefusedCancel struct {
	FY     string
	Serial int64
	Number string
	Reason string // the server's refusal
}

// CancelsRefusedError is returned by Sync (and so End, which then ends
// the lease all the same) when the server refused cancellations because
// their invoices' months were locked: the terminal voided them and
// uploaded everything else. Correct each invoice with a credit note.
type CancelsRefusedError struct {
	Cancels []RefusedCancel
}

// Error lists the refused cancellations.
func (e *CancelsRefusedError) Error() string {
	var b strings.Builder
	b.WriteString("offline: the server refused the cancellation of")
	for i, c := range e.Cancels {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s (%s)", c.Number, c.Reason)
	}
	b.WriteString(": they stand uncancelled; issue a credit note for each")
	return b.String()
}

// RefusedCancels returns every cancellation of this terminal that the
// server refused because the invoice's month was locked.
func (t *Terminal) RefusedCancels() []RefusedCancel {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]RefusedCancel(nil), t.refusedCancels...)
}

// refusedCancel returns the refused cancellation of invoice k, if any.
// t.mu is held.
func (t *Terminal) refusedCancel(k invoiceKey) (RefusedCancel, bool) {
	for _, r := range t.refusedCancels {
		if r.FY == k.fy.String() && r.Serial == k.serial {
			return r, true
		}
	}
	return RefusedCancel{}, false
}

// void journals and applies the void of the pending cancellation at
// position pos of fy, which the server refused (reason), and returns it.
// t.mu is held.
func (t *Terminal) void(fy gst.FY, pos int64, reason string) (RefusedCancel, error) {
	if err := t.write(record{Kind: "void", FY: fy.String(), Position: pos, Reason: reason}); err != nil {
		return RefusedCancel{}, err
	}
	if err := t.voidCancel(fy, pos, reason); err != nil {
		t.broken = true // the journal holds a void the state cannot apply
		return RefusedCancel{}, fmt.Errorf("%w: %v", ErrBroken, err)
	}
	return t.refusedCancels[len(t.refusedCancels)-1], nil
}

// voidCancel applies the void of the pending cancellation at position pos
// of fy: the invoice is no longer cancelled, the cancel record leaves the
// queue, and every later pending record of fy moves down one position and
// is chained again from the head before the cancel. It fails when no
// pending cancellation is at pos, or a record cannot be rebuilt.
func (t *Terminal) voidCancel(fy gst.FY, pos int64, reason string) error {
	at := -1
	for i, p := range t.queue {
		if p.fy == fy && p.cancel != nil && p.cancel.Position == pos {
			at = i
			break
		}
	}
	if at < 0 {
		return fmt.Errorf("no pending cancellation at position %d of %s to void", pos, fy)
	}
	c := t.queue[at]
	k := invoiceKey{fy, c.cancel.Serial}
	delete(t.cancelled, k)
	t.refusedCancels = append(t.refusedCancels, RefusedCancel{FY: fy.String(), Serial: k.serial, Number: c.cancel.Number, Reason: reason})
	t.queue = append(t.queue[:at], t.queue[at+1:]...)
	head, next := c.prev, pos
	for i := at; i < len(t.queue); i++ {
		p := &t.queue[i]
		if p.fy != fy {
			continue
		}
		hash, err := t.chainAgain(*p, next, head)
		if err != nil {
			return err
		}
		p.prev = head
		if p.cancel != nil {
			moved := *p.cancel
			moved.Position, moved.ChainHash = next, hex.EncodeToString(hash)
			p.cancel = &moved
		} else {
			p.inv.ChainHash = hex.EncodeToString(hash)
			k := invoiceKey{fy, p.inv.Serial}
			di := t.invoices[k]
			di.ChainHash = p.inv.ChainHash
			t.invoices[k] = di
		}
		head, next = hash, next+1
	}
	y := t.year(fy)
	y.length, y.head = next-1, head
	return nil
}

// chainAgain returns the chain hash of pending record p at position pos
// after head, computed as when it was made (document.NumberOffline,
// document.CancelOffline) from its content and time.
func (t *Terminal) chainAgain(p pendingRecord, pos int64, head []byte) ([]byte, error) {
	if p.cancel == nil {
		_, hash, err := t.renumber(p.inv, pos, head)
		return hash, err
	}
	inv, err := t.rebuild(p.fy, t.invoices[invoiceKey{p.fy, p.cancel.Serial}])
	if err != nil {
		return nil, err
	}
	at, err := time.Parse(time.RFC3339Nano, p.cancel.CancelledAt)
	if err != nil {
		return nil, err
	}
	_, hash, err := document.CancelOffline(t.seller.GSTIN, inv, p.cancel.Reason, at, pos, head)
	return hash, err
}
