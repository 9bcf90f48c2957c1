package invoice_test

import (
	"errors"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
)

// TestDateWindowByTheDatabaseClock: with DatabaseClock, a request with an
// idempotency key is judged by the database's today, whatever the
// process's clock says (here, days behind): dated the database's today it
// is issued, by the ordinary and by the predicted path; dated the
// process's today, too old for the database, it is refused invalid_date.
func TestDateWindowByTheDatabaseClock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	var today time.Time
	if err := f.pool.QueryRow(ctx, `SELECT (clock_timestamp() AT TIME ZONE 'Asia/Kolkata')::date`).Scan(&today); err != nil {
		t.Fatal(err)
	}
	today = time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
	processNow := today.AddDate(0, 0, -3).Add(6 * time.Hour) // the process's clock is 3 days behind
	c := mustCommitter(invoice.NewCommitter(f.pool, testfactory.Config(t, invoice.Config{Now: func() time.Time { return processNow },
		DateWindow: &document.Policy{BackdateDays: 1}, DateClock: invoice.DatabaseClock,
		Options: series.Options{LockTimeout: 10 * time.Second}})))
	draft := func(key string, date time.Time) document.Draft {
		d, err := document.PrepareContent(document.Request{InvoiceDate: date, Items: []document.ItemInput{chai("1", "10", "5")}}, f.seller, f.s, processNow)
		if err != nil {
			t.Fatal(err)
		}
		d.IdempotencyKey, d.RequestHash = key, []byte(key)
		return d
	}
	for i, key := range []string{"ordinary", "predicted", "predicted-2"} {
		r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: draft(key, today)})
		if r.Err != nil || r.Invoice.Serial != int64(i+1) {
			t.Fatalf("%s, dated the database's today: %+v", key, r)
		}
	}
	if r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: draft("old", processNow)}); !errors.Is(r.Err, gst.ErrInvalidDate) {
		t.Fatalf("dated the process's today, 3 days before the database's: %+v", r)
	}
	if st := c.Stats(); st.Predicted == 0 {
		t.Errorf("predicted transactions: %+v, want some (none on Citus)", st)
	}
	// A process whose clock is ahead: a date the database finds in the
	// future is refused, also when the batch was predicted (the database
	// checks the window in the predicted round trip; the batch then goes
	// the ordinary way, which words the refusal).
	ahead := today.AddDate(0, 0, 3).Add(6 * time.Hour)
	c2 := mustCommitter(invoice.NewCommitter(f.pool, testfactory.Config(t, invoice.Config{Now: func() time.Time { return ahead },
		DateWindow: &document.Policy{BackdateDays: 1}, DateClock: invoice.DatabaseClock,
		Options: series.Options{LockTimeout: 10 * time.Second}})))
	if r := c2.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: draft("ahead-1", today)}); r.Err != nil || r.Invoice.Serial != 4 {
		t.Fatalf("second process, dated the database's today: %+v", r)
	}
	if r := c2.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: draft("ahead-2", ahead)}); !errors.Is(r.Err, gst.ErrInvalidDate) {
		t.Fatalf("dated the process's today, 3 days after the database's: %+v", r)
	}
	if st := c2.Stats(); st.Mispredicted != 1 {
		t.Errorf("the predicted batch with a date in the database's future: stats %+v, want one misprediction", st)
	}
	checkContiguous(t, serialsOf(t, f), 4)
}
