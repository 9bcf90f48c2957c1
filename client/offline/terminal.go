package offline

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
)

// Errors of a Terminal.
var (
	// ErrEnded is returned by Issue after the lease was ended.
	ErrEnded = errors.New("offline: the lease has ended")
	// ErrBroken is returned after a journal write failed: the terminal
	// must be reopened (Open recovers the journal).
	ErrBroken = errors.New("offline: a journal write failed; reopen the terminal")
	// ErrWrongLease is returned by Create for a journal that holds
	// another lease.
	ErrWrongLease = errors.New("offline: the journal holds another lease")
	// ErrEndPending is returned by Issue and Cancel while the end of the
	// lease was asked for and its outcome is not known (the answer was
	// lost, or the terminal restarted before recording it): call End
	// again, which learns whether the lease ended (then Issue returns
	// ErrEnded) or still holds (then Issue works again).
	ErrEndPending = errors.New("offline: the lease's end was asked for and its outcome is not known yet; call End again")
	// ErrClockBehind is returned by Issue when the device's clock is on
	// a date before the lease's not_before: the terminal will not guess
	// the date (or the financial year) of the invoice. Set the clock.
	ErrClockBehind = errors.New("offline: the device's clock is a day or more behind the time the lease was taken (or the series' last invoice)")
	// ErrYearNotLeased is returned by Issue when the device's clock is in
	// a financial year the lease does not reserve (it reserves the year it
	// started in and the next): end the lease and take a new one.
	ErrYearNotLeased = errors.New("offline: the device's clock is in a financial year the lease does not reserve")
	// ErrKeyReused is returned by IssueKeyed for a key that numbered
	// another sale.
	ErrKeyReused = errors.New("offline: the key numbered a different sale")
	// ErrLeaseInDoubt is returned by Issue, Cancel and Sync after the
	// server refused an upload as not under the lease (409
	// lease_not_held, 404 lease_not_found) and no resume of the lease
	// has answered whether it ended: the terminal numbers nothing, also
	// after a restart, until Sync (or End) resumes the lease: ended, and
	// Issue returns ErrEnded; in force, and selling goes on.
	ErrLeaseInDoubt = errors.New("offline: the server refused an upload under the lease and whether the lease ended is not known yet; call Sync again")
)

// year is a series-year as the terminal numbered it.
type year struct {
	last     int64 // last serial numbered
	length   int64 // chain records
	head     []byte
	uploaded int64 // last serial the server holds
}

// Receipt is what Issue returns once the invoice is durable.
type Receipt struct {
	Serial    int64
	Number    string
	FY        string
	IssuedAt  time.Time
	Invoice   document.Invoice // with the server's own amounts
	ChainHash string
	// Replayed: IssueKeyed found the key's invoice in the journal; this
	// is that invoice, to print again.
	Replayed bool
}

// Terminal numbers the invoices of one leased series on a journal. Its
// methods are safe for concurrent use.
type Terminal struct {
	mu       sync.Mutex
	j        *journal
	broken   bool
	ended    bool
	ending   bool      // End is running: Issue and Cancel wait for its outcome
	pending  *endMark  // an "ending" journaled, its outcome not yet known
	epoch    int64     // the lease's end epoch as last learnt (ResumeLease)
	doubt    bool      // a "doubt" journaled: the lease may have ended
	floor    time.Time // the lease's not_before
	now      func() time.Time
	lease    client.Lease
	seller   gst.Seller
	series   gst.Series
	years    map[gst.FY]*year
	reserved []gst.FY        // the years the lease reserves, in order
	lastAt   time.Time       // last issue time: issue times never go back
	queue    []pendingRecord // not yet uploaded, in chain order
	numbered int64           // invoices in the journal
	batch    int             // records an upload carries at most (halved on over_rate_limit)
	// The invoices numbered under this lease, to cancel them.
	invoices  map[invoiceKey]client.DeviceInvoice
	byNumber  map[string]invoiceKey
	cancelled map[invoiceKey]bool
	keys      map[string]invoiceKey // caller's keys (IssueKeyed)
	// refusedCancels: cancellations the server refused because the
	// invoice's month was locked (void.go), in the order refused.
	refusedCancels []RefusedCancel
}

// pendingRecord is an invoice or a cancellation not yet uploaded, with the
// chain head before it (to chain it again after a refused cancellation,
// void.go).
type pendingRecord struct {
	fy     gst.FY
	inv    client.DeviceInvoice
	cancel *client.DeviceCancel // nil for an invoice
	prev   []byte
}

// maxBatch is the most records an upload carries (the server takes 1,000).
const maxBatch = 500

// Create starts a journal at path for lease l, just taken (client.Lease
// with Next, SellerGSTIN, DocType and Format). now is the device's clock
// (nil: time.Now). Creating it again for the same lease opens it; for
// another lease it fails with ErrWrongLease.
func Create(path string, l client.Lease, now func() time.Time) (*Terminal, error) {
	t, err := Open(path, now)
	if err != nil && !errors.Is(err, ErrNoLease) {
		return nil, err
	}
	if err == nil {
		if t.lease.LeaseID != l.LeaseID {
			t.Close()
			return nil, ErrWrongLease
		}
		return t, nil
	}
	t = newTerminal(t.j, t.now)
	if err := t.setLease(l); err != nil {
		t.j.close()
		return nil, err
	}
	if err := t.write(record{Kind: "lease", Lease: &l}); err != nil {
		t.j.close()
		return nil, err
	}
	return t, nil
}

// ErrNoLease is returned by Open for a journal that holds no lease yet
// (a new one): lease the series and call Create.
var ErrNoLease = errors.New("offline: the journal holds no lease")

// Open opens the journal at path and recovers the terminal's state from
// it: a record torn by a power cut (never acknowledged) is discarded, so
// the next invoice takes the serial after the last one acknowledged. It
// fails with ErrCorrupt for a journal damaged elsewhere.
func Open(path string, now func() time.Time) (*Terminal, error) {
	if now == nil {
		now = time.Now
	}
	j, recs, err := openJournal(path)
	if err != nil {
		return nil, err
	}
	t := newTerminal(j, now)
	if len(recs) == 0 {
		return t, ErrNoLease
	}
	for i, b := range recs {
		var r record
		if err := json.Unmarshal(b, &r); err != nil {
			j.close()
			return nil, fmt.Errorf("%w: record %d: %v", ErrCorrupt, i, err)
		}
		if err := t.replay(r, i == 0); err != nil {
			j.close()
			return nil, fmt.Errorf("%w: record %d: %v", ErrCorrupt, i, err)
		}
	}
	return t, nil
}

func newTerminal(j *journal, now func() time.Time) *Terminal {
	return &Terminal{j: j, now: now, years: map[gst.FY]*year{}, batch: maxBatch,
		invoices: map[invoiceKey]client.DeviceInvoice{}, byNumber: map[string]invoiceKey{}, cancelled: map[invoiceKey]bool{},
		keys: map[string]invoiceKey{}}
}

// latestYear returns the latest series-year numbered: the latest that
// holds a serial (numbered by this terminal, or before the lease), else
// the first year the lease reserves. The lease's end names it. t.mu is
// held.
func (t *Terminal) latestYear() gst.FY {
	latest := t.reserved[0]
	for fy, y := range t.years {
		if y.last > 0 && fy > latest {
			latest = fy
		}
	}
	return latest
}

func (t *Terminal) year(fy gst.FY) *year {
	y, ok := t.years[fy]
	if !ok {
		y = &year{}
		t.years[fy] = y
	}
	return y
}

// Issue numbers req with the next serial of its series-year and returns
// the receipt once the invoice is in the journal and fsynced: print the
// receipt only then. The invoice's time is the device clock's, or the
// last invoice's (or the lease's not_before) when the clock is behind it
// on the same day (issue times never go back); its date is that time's
// date in IST, so the financial year turns over at IST midnight on 1
// April by the device's clock, and it takes the next serial of that year
// from where the lease said the year stands. It fails with the invoice
// package's validation errors and document.ErrParticularsMissing (nothing
// numbered), ErrClockBehind when the clock is on a date before the
// lease's not_before, ErrYearNotLeased when the date is in a year the
// lease does not reserve, ErrEndPending while the lease's
// end has no known outcome, ErrLeaseInDoubt while an upload's refusal left
// open whether the lease ended, ErrEnded, or ErrBroken after a journal write
// failed. A sale that may be rung up again after a crash (journaled, not
// printed) should use IssueKeyed.
func (t *Terminal) Issue(req client.IssueRequest) (Receipt, error) {
	return t.IssueKeyed("", req)
}

// IssueKeyed is Issue with the caller's key of the sale (its sale id in
// the point-of-sale system; "" for none): when the journal already holds
// an invoice numbered with key, it returns that invoice's receipt with
// Replayed set, to print again, and numbers nothing, even after the lease
// ended. It fails as Issue, and with ErrKeyReused when the key's invoice
// is of another sale (other items, buyer or original).
func (t *Terminal) IssueKeyed(key string, req client.IssueRequest) (Receipt, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k, ok := t.keys[key]; ok && key != "" {
		return t.replayReceipt(k, req)
	}
	switch {
	case t.broken:
		return Receipt{}, ErrBroken
	case t.ended:
		return Receipt{}, ErrEnded
	case t.ending, t.pending != nil:
		return Receipt{}, ErrEndPending
	case t.doubt:
		return Receipt{}, ErrLeaseInDoubt
	}
	clock := t.now().UTC().Truncate(time.Microsecond)
	if gst.DateIST(clock).Before(gst.DateIST(t.floor)) {
		return Receipt{}, fmt.Errorf("%w: the clock says %s, the lease allows nothing before %s", ErrClockBehind,
			clock.In(gst.IST).Format(time.DateTime+" IST"), t.floor.In(gst.IST).Format(time.DateTime+" IST"))
	}
	at := clock
	if at.Before(t.lastAt) {
		at = t.lastAt
	}
	r, err := request(req)
	if err != nil {
		return Receipt{}, err
	}
	r.InvoiceDate = gst.DateIST(at)
	fy := gst.FYOf(r.InvoiceDate)
	if !slices.Contains(t.reserved, fy) {
		return Receipt{}, fmt.Errorf("%w: the clock says %s, in %s; the lease reserves %s to %s", ErrYearNotLeased,
			clock.In(gst.IST).Format(time.DateOnly), fy, t.reserved[0], t.reserved[len(t.reserved)-1])
	}
	y := t.year(fy)
	inv, hash, err := document.NumberOffline(t.seller, t.series, r, y.last+1, y.length+1, y.head, at)
	if err != nil {
		return Receipt{}, err
	}
	// The server stores an uploaded invoice whatever its particulars (it
	// is printed already): the till is where Rule 46 is kept.
	if err := document.CheckParticulars(&document.Draft{Buyer: inv.Buyer, ShipTo: inv.ShipTo, Totals: inv.Totals}, t.series.DocType); err != nil {
		return Receipt{}, err
	}
	di := client.DeviceInvoice{
		Serial: inv.Serial, Number: inv.Number, InvoiceDate: inv.InvoiceDate.Format(time.DateOnly), IssuedAt: document.Timestamp(at),
		Buyer: req.Buyer, ShipTo: req.ShipTo, PlaceOfSupply: inv.PlaceOfSupply, Items: req.Items, Original: req.Original,
		Totals: client.Totals{Taxable: document.Money(inv.Totals.Taxable), CGST: document.Money(inv.Totals.CGST),
			SGST: document.Money(inv.Totals.SGST), IGST: document.Money(inv.Totals.IGST), Total: document.Money(inv.Totals.Total)},
		ChainHash: hex.EncodeToString(hash),
	}
	if err := t.write(record{Kind: "inv", Key: key, FY: fy.String(), Position: y.length + 1, Invoice: &di}); err != nil {
		return Receipt{}, err
	}
	t.remember(fy, di, key, y.head)
	y.last, y.length, y.head, t.lastAt = inv.Serial, y.length+1, hash, at
	t.numbered++
	return Receipt{Serial: inv.Serial, Number: inv.Number, FY: fy.String(), IssuedAt: at, Invoice: inv, ChainHash: di.ChainHash}, nil
}

// replayReceipt returns the receipt of the journaled invoice k for a
// retry of req under its key; ErrKeyReused when req is another sale.
func (t *Terminal) replayReceipt(k invoiceKey, req client.IssueRequest) (Receipt, error) {
	di := t.invoices[k]
	same := func(a, b any) bool {
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		return string(x) == string(y)
	}
	if !same(req.Buyer, di.Buyer) || !same(req.ShipTo, di.ShipTo) || !same(req.Items, di.Items) || !same(req.Original, di.Original) ||
		(req.PlaceOfSupply != "" && req.PlaceOfSupply != di.PlaceOfSupply) {
		return Receipt{}, fmt.Errorf("%w: it numbered %s", ErrKeyReused, di.Number)
	}
	inv, err := t.rebuild(k.fy, di)
	if err != nil {
		return Receipt{}, err
	}
	at, err := time.Parse(time.RFC3339Nano, di.IssuedAt)
	if err != nil {
		return Receipt{}, err
	}
	return Receipt{Serial: di.Serial, Number: di.Number, FY: k.fy.String(), IssuedAt: at, Invoice: inv, ChainHash: di.ChainHash, Replayed: true}, nil
}

// request converts the client's request to the invoice package's.
func request(req client.IssueRequest) (document.Request, error) {
	var r document.Request
	if req.Buyer != nil {
		r.Buyer = &document.Buyer{GSTIN: req.Buyer.GSTIN, Name: req.Buyer.Name}
		if a := req.Buyer.Address; a != nil {
			r.Buyer.Address = &document.Address{Line1: a.Line1, Line2: a.Line2, City: a.City, PIN: a.PIN, State: a.State}
		}
	}
	if st := req.ShipTo; st != nil {
		a := st.Address
		r.ShipTo = &document.ShipTo{Name: st.Name, Address: document.Address{Line1: a.Line1, Line2: a.Line2, City: a.City, PIN: a.PIN, State: a.State}}
	}
	r.PlaceOfSupply = req.PlaceOfSupply
	for _, it := range req.Items {
		r.Items = append(r.Items, document.ItemInput{Description: it.Description, HSN: it.HSN, Quantity: it.Quantity, UnitPrice: it.UnitPrice, GSTRate: it.GSTRate})
	}
	if req.Original != nil {
		d, err := gst.ParseDate(req.Original.InvoiceDate)
		if err != nil {
			return document.Request{}, err
		}
		r.Original = &document.Original{Number: req.Original.Number, InvoiceDate: d, ExternalReason: req.Original.Reason}
	}
	return r, nil
}

// Pending returns how many invoices and cancellations are not yet
// uploaded.
func (t *Terminal) Pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.queue)
}

// Numbered returns how many invoices the journal holds.
func (t *Terminal) Numbered() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.numbered
}

// Lease returns the lease the terminal numbers under.
func (t *Terminal) Lease() client.Lease { return t.lease }

// Close closes the journal.
func (t *Terminal) Close() error { return t.j.close() }
