package invoice_test

import (
	"errors"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/lease"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgconn"
)

// delegating returns a Committer whose predicted batches are calls of
// invoiced_issue_rows_v2, as the Citus strategy's are; here on whichever
// database the tests run (invoice.Delegate).
func delegating(t testing.TB, f fixture, now func() time.Time) *invoice.Committer {
	return invoice.Delegate(mustCommitter(invoice.NewCommitter(f.pool, testfactory.Config(t, invoice.Config{
		Now: now, Options: series.Options{LockTimeout: 10 * time.Second}}))))
}

// TestDelegatedBatchesFallBackAndRecover walks the delegated path through
// each precondition it leaves to the ordinary path, one request at a time,
// checking after each who issued it (stats) and that nothing was taken
// twice or lost: a series-year's first batch (nothing to predict), a
// predicted one (one call), a replayed key (the key's unique index refuses
// the call; the ordinary path replays), a seller that subscribes to
// webhooks (IV006: the call had no event ids; the next call brings them),
// another writer between two batches (IV001), and a batch dated in a month
// that may have ended (the period guard is the ordinary path's).
func TestDelegatedBatchesFallBackAndRecover(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	clock := now
	c := delegating(t, f, func() time.Time { return clock })
	draft := func(key string) document.Draft {
		return testfactory.Draft(t, f.seller, f.s, clock, &testfactory.DraftOpts{Key: key})
	}
	issue := func(key string) invoice.Result {
		t.Helper()
		r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: draft(key)})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		return r
	}
	want := func(step string, delegated, mispredicted int64) {
		t.Helper()
		if st := c.Stats(); st.Delegated != delegated || st.Mispredicted != mispredicted || st.Predicted != delegated {
			t.Fatalf("%s: stats %+v, want %d delegated (all predicted), %d mispredicted", step, st, delegated, mispredicted)
		}
	}
	issue("k1")
	want("a series-year's first batch", 0, 0)
	r := issue("k2")
	want("the second batch", 1, 0)
	if r.Invoice.Serial != 2 || r.Invoice.ID == 0 || r.Replayed {
		t.Fatalf("the delegated call's invoice: %+v", r.Invoice)
	}
	got, err := invoice.Get(ctx, f.pool, f.seller.ID, r.Invoice.ID)
	if err != nil || got.Number != r.Invoice.Number || !got.Totals.Total.Equal(r.Invoice.Totals.Total) {
		t.Fatalf("stored %+v (%v), answered %+v", got, err, r.Invoice)
	}

	// A replay: the call fails on the key's unique index having taken
	// nothing, and the ordinary path replays.
	if r := issue("k2"); !r.Replayed || r.Invoice.Serial != 2 {
		t.Fatalf("replay of k2: %+v", r)
	}
	want("a replay", 1, 1)

	// The seller subscribes: the next call finds it and has no event ids.
	if _, err := f.pool.Exec(ctx, `INSERT INTO webhooks (public_id, seller_id, url, events, secret)
		VALUES ('wh_delegated', $1, 'https://example.com/hook', '{invoice.issued}', 'secret')`, f.seller.ID); err != nil {
		t.Fatal(err)
	}
	issue("k3")
	want("a subscribed seller's first call (IV006, then the ordinary path)", 1, 1)
	issue("k4")
	issue("k5")
	want("calls with event ids", 3, 1)

	// 30 November, 23:30 IST: the month may end before the call runs, so
	// the ordinary path takes the period guard; nothing is mispredicted.
	clock = time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC)
	issue("k6")
	want("near the month's end", 3, 1)
	clock = time.Date(2026, 12, 1, 4, 30, 0, 0, time.UTC)
	issue("k7")
	want("the next month", 4, 1)

	// Another writer takes a number between two batches (IV001).
	if _, err := invoice.Issue(ctx, f.pool, f.seller, f.s, draft(""), clock, testfactory.Options(t, series.Options{})); err != nil {
		t.Fatal(err)
	}
	issue("k8")
	want("another writer", 4, 2)

	checkContiguous(t, serialsOf(t, f), 9)
	verifyChains(t, f)
	// Every invoice issued after the subscription has exactly one event
	// and one delivery, and event ids follow the serials.
	rows, err := f.pool.Query(ctx, `SELECT i.serial, e.id, (SELECT count(*) FROM webhook_deliveries d WHERE d.event_id = e.id AND d.seller_id = e.seller_id)
		FROM invoices i LEFT JOIN events e ON e.invoice_id = i.id AND e.seller_id = i.seller_id AND e.type = 'invoice.issued'
		WHERE i.seller_id = $1 ORDER BY i.serial`, f.seller.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var last int64
	for rows.Next() {
		var serial int64
		var id *int64
		var deliveries int
		if err := rows.Scan(&serial, &id, &deliveries); err != nil {
			t.Fatal(err)
		}
		switch {
		case serial <= 2 && id != nil:
			t.Errorf("serial %d, issued before the subscription, has event %d", serial, *id)
		case serial > 2 && id == nil:
			t.Errorf("serial %d has no event", serial)
		case serial > 2 && (deliveries != 1 || *id <= last):
			t.Errorf("serial %d: event %d (after %d) with %d deliveries, want ascending ids and 1 delivery", serial, *id, last, deliveries)
		}
		if id != nil {
			last = *id
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestDelegatedLeasedSeriesIsRefused: a series leased to a device after a
// delegated batch is refused by the lease guard inside the call (IV017);
// the request is answered ErrLeased by the ordinary path, nothing taken.
func TestDelegatedLeasedSeriesIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	c := delegating(t, f, func() time.Time { return now })
	for _, k := range []string{"a", "b"} {
		if r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, k)}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if st := c.Stats(); st.Delegated != 1 {
		t.Fatalf("stats %+v, want the second batch delegated", st)
	}
	if _, err := lease.TakeLease(ctx, f.pool, f.s, "till-1", "test", now); err != nil {
		t.Fatal(err)
	}
	r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, "c")})
	if !errors.Is(r.Err, series.ErrLeased) {
		t.Fatalf("issue on a leased series: %+v, want ErrLeased", r)
	}
	checkContiguous(t, serialsOf(t, f), 2)
}

// TestDelegatedFailureIsALostAnswerUnlessItSaysRolledBack: on Citus the
// delegated call commits on the worker inside the statement, so an error
// of the statement is a "no" only when the function's own transaction
// raised it; a lost connection to the worker, a cancel or an internal
// error relayed by the coordinator may come after the worker committed.
func TestDelegatedFailureIsALostAnswerUnlessItSaysRolledBack(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err     error
		unknown bool
	}{
		{&pgconn.PgError{Code: "IV001"}, false},
		{&pgconn.PgError{Code: "IV017"}, false},
		{&pgconn.PgError{Code: "23505", ConstraintName: "idempotency_keys_pkey"}, false},
		{&pgconn.PgError{Code: "23514"}, false},
		{&pgconn.PgError{Code: "22021"}, false},
		{&pgconn.PgError{Code: "42883"}, false},
		{&pgconn.PgError{Code: "40P01"}, false},
		{&pgconn.PgError{Code: "55P03"}, false},
		{&pgconn.PgError{Code: "08001"}, false},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "57014"}, true},
		{&pgconn.PgError{Code: "XX000"}, true},
		{&pgconn.PgError{Code: "57P01", Severity: "FATAL"}, true},
		{errors.New("unexpected EOF"), true},
	} {
		err := invoice.DelegatedFailed(c.err)
		if got := errors.Is(err, invoice.ErrOutcomeUnknown); got != c.unknown {
			t.Errorf("%v: outcome unknown %v, want %v (%v)", c.err, got, c.unknown, err)
		}
	}
	if err := invoice.DelegatedFailed(&pgconn.PgError{Code: "23505", ConstraintName: "idempotency_keys_pkey"}); !errors.Is(err, invoice.ErrKeyRace) {
		t.Errorf("a used key: %v, want ErrKeyRace", err)
	}
}
