package lease

import (
	"bytes"
	"context"
	"errors"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/invoice"
	"github.com/jackc/pgx/v5"
	"time"
)

// MaxOfflineBatch is the most invoices one upload may hold.
const MaxOfflineBatch = 1000

// UploadResult is what an upload stored: Stored new invoices, Replayed
// ones already stored identically, and where the series-year of the last
// invoice now stands.
type UploadResult struct {
	Stored   int
	Replayed int
	Next     Position
}

// yearState is a series-year's counter as the upload advances it.
type yearState struct {
	last         int64
	lastDate     time.Time
	lastIssuedAt time.Time
	length       int64
	head         []byte
	touched      bool
	stored       Position // where the year stood before the upload
}

// UploadOffline stores invs, numbered offline by the device holding lease
// leaseID of series s, if and only if the whole batch continues the
// series: invoices already stored identically (same serial and chain
// hash) are replayed, and each new one must carry the next serial of its
// series-year, the number the format renders for it, an invoice date and
// issue time not before the previous invoice's nor before the lease was
// taken (in a financial year the lease reserves), the amounts and the
// chain hash the server computes (document.NumberOffline). Nothing is stored
// otherwise.
//
// It returns ErrLeaseNotFound or ErrLeaseNotHeld for a lease
// that cannot upload, a *ContinuationError (ErrNotContinuation) naming
// the expected next serial and chain head when a serial does not
// continue, ErrYearBeforeLease, ErrYearAfterLease and
// ErrIssuedBeforeLease, and document.ErrInvalid (or the errors of document.PrepareContent) naming the
// first bad invoice and field.
func UploadOffline(ctx context.Context, b db.Beginner, seller gst.Seller, s gst.Series, leaseID string, invs []OfflineInvoice, now time.Time) (UploadResult, error) {
	if len(invs) == 0 || len(invs) > MaxOfflineBatch {
		return UploadResult{}, apperr.Errorf(document.ErrInvalid, "invoices must hold 1 to %d invoices", MaxOfflineBatch)
	}
	var res UploadResult
	err := db.InTx(ctx, b, func(tx pgx.Tx) error {
		lease, err := WriteAsLeaseTx(ctx, tx, s, leaseID, now)
		if err != nil {
			return err
		}
		u := &upload{tx: tx, seller: seller, s: s, lease: lease, now: now, years: map[gst.FY]*yearState{}}
		for i, o := range invs {
			if err := u.add(ctx, i, o); err != nil {
				return err
			}
		}
		res = u.res
		res.Stored = len(u.rows)
		res.Next = Position{FY: u.fy, Serial: u.st.last + 1, ChainLength: u.st.length, ChainHead: u.st.head, LastIssuedAt: u.st.lastIssuedAt}
		if len(u.rows) == 0 {
			return nil
		}
		return u.write(ctx)
	})
	if err != nil {
		return UploadResult{}, leaseTxFailed(err)
	}
	return res, nil
}

// upload is an upload of invoices in progress, inside its transaction
// tx, under lease: the series-years it locked (years; st the one of the
// last invoice, fy), and the invoices verified so far with their chain
// hashes and positions.
type upload struct {
	tx        pgx.Tx
	seller    gst.Seller
	s         gst.Series
	lease     Lease
	now       time.Time
	years     map[gst.FY]*yearState
	fy        gst.FY
	st        *yearState
	rows      []document.Invoice
	hashes    [][]byte
	positions []int64
	res       UploadResult // its Replayed count
}

// add verifies invoice i, o, of the upload: it replays o when it is
// stored already, and otherwise numbers it as the server would and keeps
// it to write. It fails as UploadOffline, for o.
func (u *upload) add(ctx context.Context, i int, o OfflineInvoice) error {
	y, err := u.yearOf(ctx, i, o)
	if err != nil {
		return err
	}
	st := u.st
	if o.Serial <= st.last && !st.touched {
		same, err := storedSame(ctx, u.tx, u.s, y, o)
		if err != nil {
			return err
		}
		if same {
			u.res.Replayed++
			return nil
		}
	}
	if o.Serial != st.last+1 {
		return &ContinuationError{
			Expected: st.stored,
			err: apperr.Errorf(ErrNotContinuation, "invoices[%d].serial %d does not continue series %s %s, where serial %d comes next; nothing was stored: the series holds serials up to %d (chain head %x)",
				i, o.Serial, u.s.Code, y, st.last+1, st.stored.Serial-1, st.stored.ChainHead),
		}
	}
	if err := u.checkTimes(i, o); err != nil {
		return err
	}
	inv, hash, err := document.NumberOffline(u.seller, u.s, o.Request, o.Serial, st.length+1, st.head, o.IssuedAt)
	if err != nil {
		return apperr.Errorf(apperrOf(err), "invoices[%d]: %s", i, apperr.MessageOf(err))
	}
	if err := checkOffline(i, o, inv, hash); err != nil {
		return err
	}
	inv.PublicID = document.NewPublicID(u.seller.ID, inv.IssuedAt)
	u.rows, u.hashes, u.positions = append(u.rows, inv), append(u.hashes, hash), append(u.positions, st.length+1)
	st.last, st.lastDate, st.lastIssuedAt, st.length, st.head, st.touched = o.Serial, inv.InvoiceDate, inv.IssuedAt, st.length+1, hash, true
	return nil
}

// yearOf returns the financial year of invoice i, o, and makes its
// series-year the upload's current one (u.st), locking its counter row
// the first time. It returns gst.ErrInvalidDate for a date outside the
// supported years, ErrYearBeforeLease and ErrYearAfterLease for a year
// the lease does not reserve, document.ErrInvalid for a year before the
// previous invoice's, or the failure of the lock.
func (u *upload) yearOf(ctx context.Context, i int, o OfflineInvoice) (gst.FY, error) {
	date := o.Request.InvoiceDate.Format(time.DateOnly)
	y := gst.FYOf(o.Request.InvoiceDate)
	if !y.Valid() {
		return 0, apperr.Errorf(gst.ErrInvalidDate, "invoices[%d].invoice_date %s is outside the supported financial years", i, date)
	}
	if y < u.lease.StartFY() {
		return 0, apperr.Errorf(ErrYearBeforeLease, "invoices[%d].invoice_date %s is in %s, before %s, the year lease %s started in", i, date, y, u.lease.StartFY(), u.lease.ID)
	}
	if !u.lease.Reserves(y) {
		years := u.lease.Years()
		return 0, apperr.Errorf(ErrYearAfterLease, "invoices[%d].invoice_date %s is in %s; lease %s reserves %s and %s only", i, date, y, u.lease.ID, years[0], years[len(years)-1])
	}
	if u.st != nil && y == u.fy {
		return y, nil
	}
	if u.st != nil && y < u.fy {
		return 0, apperr.Errorf(document.ErrInvalid, "invoices[%d].invoice_date %s goes back to %s after an invoice of %s", i, date, y, u.fy)
	}
	st, err := lockYear(ctx, u.tx, u.s, y)
	if err != nil {
		return 0, err
	}
	u.fy, u.st, u.years[y] = y, st, st
	return y, nil
}

// checkTimes returns nil when invoice i, o, is dated and issued not
// before the previous invoice of its series-year, issued not before the
// lease was taken and dated not after the server's tomorrow;
// ErrIssuedBeforeLease or document.ErrInvalid otherwise.
func (u *upload) checkTimes(i int, o OfflineInvoice) error {
	st := u.st
	if o.Request.InvoiceDate.Before(st.lastDate) {
		return apperr.Errorf(document.ErrInvalid, "invoices[%d].invoice_date %s is before %s, the previous invoice's", i, o.Request.InvoiceDate.Format(time.DateOnly), st.lastDate.Format(time.DateOnly))
	}
	if o.IssuedAt.Before(st.lastIssuedAt) {
		return apperr.Errorf(document.ErrInvalid, "invoices[%d].issued_at %s is before %s, the previous invoice's", i, document.Timestamp(o.IssuedAt), document.Timestamp(st.lastIssuedAt))
	}
	if o.IssuedAt.Before(u.lease.LeasedAt) {
		return apperr.Errorf(ErrIssuedBeforeLease, "invoices[%d].issued_at %s is before %s, when lease %s was taken", i, document.Timestamp(o.IssuedAt), document.Timestamp(u.lease.LeasedAt), u.lease.ID)
	}
	if o.Request.InvoiceDate.After(gst.DateIST(u.now).AddDate(0, 0, 1)) {
		return apperr.Errorf(document.ErrInvalid, "invoices[%d].invoice_date %s is in the future", i, o.Request.InvoiceDate.Format(time.DateOnly))
	}
	return nil
}

// apperrOf returns the sentinel-like coded error of err, document.ErrInvalid when it
// has none, so that an upload's message can name the invoice.
func apperrOf(err error) *apperr.Error {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae
	}
	return document.ErrInvalid
}

// lockYear locks the counter row of (s, fy), when there is one, and
// returns its state.
func lockYear(ctx context.Context, tx pgx.Tx, s gst.Series, fy gst.FY) (*yearState, error) {
	st := &yearState{stored: Position{FY: fy, Serial: 1}}
	err := tx.QueryRow(ctx, `SELECT last_serial, last_invoice_date, last_issued_at, chain_length, chain_head
		FROM series_counters WHERE series_id = $1 AND fy = $2 AND seller_id = $3 FOR UPDATE`, s.ID, int(fy), s.SellerID).
		Scan(&st.last, &st.lastDate, &st.lastIssuedAt, &st.length, &st.head)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return st, nil
	case err != nil:
		return nil, translate(err, "lock counter")
	}
	st.stored = Position{FY: fy, Serial: st.last + 1, ChainLength: st.length, ChainHead: st.head, LastIssuedAt: st.lastIssuedAt}
	return st, nil
}

// storedSame reports whether o is stored already: its serial's issue
// record has o's chain hash (which seals every field).
func storedSame(ctx context.Context, tx pgx.Tx, s gst.Series, fy gst.FY, o OfflineInvoice) (bool, error) {
	var h []byte
	err := tx.QueryRow(ctx, `SELECT hash FROM chain_records WHERE series_id = $1 AND fy = $2 AND serial = $3 AND kind = 'issue' AND seller_id = $4`,
		s.ID, int(fy), o.Serial, s.SellerID).Scan(&h)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, translate(err, "read record")
	}
	return bytes.Equal(h, o.ChainHash), nil
}

// write inserts the verified invoices and their issue records and
// advances the counter rows of the years they touched, in one round trip,
// and records their events in a second when the seller subscribes.
func (u *upload) write(ctx context.Context) error {
	b := &pgx.Batch{}
	for y, st := range u.years {
		if !st.touched {
			continue
		}
		b.Queue(`INSERT INTO series_counters AS c (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at, chain_length, chain_head)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (series_id, fy, seller_id) DO UPDATE SET last_serial = EXCLUDED.last_serial,
				last_invoice_date = EXCLUDED.last_invoice_date, last_issued_at = EXCLUDED.last_issued_at,
				chain_length = EXCLUDED.chain_length, chain_head = EXCLUDED.chain_head`,
			u.s.ID, int(y), u.seller.ID, st.last, u.s.Format.Capacity(), st.lastDate, st.lastIssuedAt, st.length, st.head)
	}
	for i := range u.rows {
		if err := invoice.QueueIssued(b, &u.rows[i], u.positions[i], u.hashes[i]); err != nil {
			return err
		}
	}
	events := invoice.QueueSubscribers(b, u.seller.ID, invoice.EventIssued)
	if err := u.tx.SendBatch(ctx, b).Close(); err != nil {
		return translate(err, "store offline invoices")
	}
	// The events need the invoices' ids: a round trip of their own, only
	// when the seller subscribes (invoice/routed_store.go says why not a
	// CTE).
	eb := &pgx.Batch{}
	all := make([]*document.Invoice, len(u.rows))
	for i := range u.rows {
		all[i] = &u.rows[i]
	}
	if !events.Queue(eb, all, func(inv *document.Invoice) time.Time { return inv.IssuedAt }) {
		return nil
	}
	return translate(u.tx.SendBatch(ctx, eb).Close(), "record offline invoices' events")
}
