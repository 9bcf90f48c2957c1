package offline

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/gst"
)

// This file holds the journal's records: what each kind holds, writing
// one, and replaying them into a Terminal's state (Open).

// record is one journal record.
type record struct {
	// "lease", "inv", "cancel", "up", "upc"; "void" (FY, Position,
	// Reason) when the server refused the cancellation at that position
	// (its month was locked): the records after it are chained again;
	// "ending" (FY, Through) before the lease's end is asked for, then
	// "end" when it ended or "resume" when it is shown to hold; "doubt"
	// when the server refused an upload as not under the lease, then
	// "end" or "resume" likewise.
	Kind string `json:"k"`
	// Key is the caller's key of an invoice (IssueKeyed).
	Key string `json:"key,omitempty"`

	Lease *client.Lease `json:"lease,omitempty"`

	FY       string                `json:"fy,omitempty"`
	Position int64                 `json:"pos,omitempty"` // the invoice's chain position
	Invoice  *client.DeviceInvoice `json:"inv,omitempty"`
	Cancel   *client.DeviceCancel  `json:"cancel,omitempty"`

	// "up": invoices uploaded through this serial of FY; "upc":
	// cancellations uploaded through this chain position of FY.
	Through int64 `json:"through,omitempty"`
	// Epoch: of an "ending", the lease's end epoch the end is asked at;
	// of a "resume", the lease's new end epoch.
	Epoch int64 `json:"epoch,omitempty"`
	// Reason: of a "void", the server's refusal.
	Reason string `json:"reason,omitempty"`
}

// replay applies one journal record to t's state.
func (t *Terminal) replay(r record, first bool) error {
	if first != (r.Kind == "lease") {
		return errors.New("the first record, and only it, is the lease")
	}
	switch r.Kind {
	case "lease":
		return t.setLease(*r.Lease)
	case "inv":
		fy, err := gst.ParseFY(r.FY)
		if err != nil {
			return err
		}
		y := t.year(fy)
		if r.Invoice.Serial != y.last+1 || r.Position != y.length+1 {
			return fmt.Errorf("serial %d at position %d does not follow %d", r.Invoice.Serial, r.Position, y.last)
		}
		h, err := hex.DecodeString(r.Invoice.ChainHash)
		if err != nil {
			return err
		}
		at, err := time.Parse(time.RFC3339Nano, r.Invoice.IssuedAt)
		if err != nil {
			return err
		}
		t.remember(fy, *r.Invoice, r.Key, y.head)
		y.last, y.length, y.head, t.lastAt = r.Invoice.Serial, r.Position, h, at
		t.numbered++
	case "cancel":
		return t.replayCancel(r)
	case "void":
		fy, err := gst.ParseFY(r.FY)
		if err != nil {
			return err
		}
		return t.voidCancel(fy, r.Position, r.Reason)
	case "up", "upc":
		fy, err := gst.ParseFY(r.FY)
		if err != nil {
			return err
		}
		t.markUploaded(fy, r.Kind == "upc", r.Through)
	case "ending":
		fy, err := gst.ParseFY(r.FY)
		if err != nil {
			return err
		}
		t.pending = &endMark{fy: fy, last: r.Through, epoch: r.Epoch}
	case "doubt":
		t.doubt = true
	case "resume":
		t.pending, t.doubt = nil, false
		t.epoch = max(t.epoch, r.Epoch)
	case "end":
		t.ended, t.pending, t.doubt = true, nil, false
	default:
		return fmt.Errorf("unknown record kind %q", r.Kind)
	}
	return nil
}

// setLease sets the seller, series and the years the lease reserves, each
// with its starting position, from l: l.Years, or (a lease from a server
// that reserved no years) Next's year alone.
func (t *Terminal) setLease(l client.Lease) error {
	if l.Next == nil {
		return errors.New("offline: the lease has no next position")
	}
	g, err := gst.ParseGSTIN(l.SellerGSTIN)
	if err != nil {
		return err
	}
	dt, err := gst.ParseDocType(l.DocType)
	if err != nil {
		return err
	}
	f, err := gst.ParseFormat(l.Format)
	if err != nil {
		return err
	}
	years := l.Years
	if len(years) == 0 {
		years = []client.Position{*l.Next}
	}
	for _, p := range years {
		fy, err := gst.ParseFY(p.FY)
		if err != nil {
			return err
		}
		head, err := hex.DecodeString(p.ChainHead)
		if err != nil {
			return err
		}
		if len(head) == 0 {
			head = nil
		}
		t.years[fy] = &year{last: p.Serial - 1, length: p.ChainLength, head: head, uploaded: p.Serial - 1}
		t.reserved = append(t.reserved, fy)
	}
	t.lease = l
	t.epoch = l.EndEpoch
	t.seller = gst.Seller{GSTIN: g, StateCode: g.StateCode()}
	t.series = gst.Series{Code: l.Series, DocType: dt, Format: f}
	// Issue times continue the series', whatever the device's clock says:
	// from not_before (the later of the lease's time and the series' last
	// issue time in any year), or from a server without it, the last
	// issue time of Next's year.
	floor := l.NotBefore
	if floor == "" {
		floor = l.Next.LastIssuedAt
	}
	if floor != "" {
		at, err := time.Parse(time.RFC3339Nano, floor)
		if err != nil {
			return err
		}
		t.floor, t.lastAt = at.UTC(), at.UTC()
	}
	return nil
}

// write appends r to the journal; a failure breaks the terminal.
func (t *Terminal) write(r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := t.j.append(b); err != nil {
		t.broken = true
		return fmt.Errorf("%w: %v", ErrBroken, err)
	}
	return nil
}
