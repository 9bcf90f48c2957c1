package invoice_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The tests of this file check what an answer of the Committer lets a
// caller conclude: a refusal or a "not issued" is never followed by the
// invoice being committed, and the answer for one request does not depend
// on how it was batched.

// waitUntil waits until cond holds, failing t after 10 s (testwait).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, 10*time.Second, cond, "%s", what)
}

// holdRow locks the counter row of s in the year of now from another
// transaction, so that the Committer's next transaction on it waits; the
// returned function releases it.
func holdRow(t *testing.T, f fixture, s gst.Series) func() {
	t.Helper()
	ctx := t.Context()
	holder, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := series.LockChain(ctx, holder, s.SellerID, s.ID, gst.FYOf(now), testfactory.Options(t, series.Options{})); err != nil {
		t.Fatal(err)
	}
	release := sync.OnceFunc(func() { holder.Rollback(t.Context()) })
	t.Cleanup(release)
	return release
}

func keyCount(t *testing.T, f fixture, key string) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(t.Context(), `SELECT count(*) FROM idempotency_keys WHERE key = $1`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestIssueDeadlineBeforeAndAfterTheBatch: a caller that gives up while its
// request still waits in the queue hears an error and its invoice is never
// issued (it left the queue); a caller that gives up once its request was
// taken into a transaction hears ErrOutcomeUnknown, never a plain
// "unavailable", because that transaction may still commit.
func TestIssueDeadlineBeforeAndAfterTheBatch(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gated := &gatedPool{Pool: f.pool, gate: make(chan struct{})}
	c := mustCommitter(invoice.NewCommitter(gated, testfactory.Config(t, invoice.Config{Now: func() time.Time { return now },
		Options: series.Options{LockTimeout: 20 * time.Second}})))
	if r := c.Issue(t.Context(), invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, "first")}); r.Err != nil {
		t.Fatal(r.Err)
	}
	// The next transaction waits for a connection until the gate opens.
	gated.armed.Store(true)
	var wg sync.WaitGroup
	var taken, queued invoice.Result
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		taken = c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, "taken")})
	})
	waitUntil(t, "the first transaction", func() bool { return gated.waiting.Load() == 1 })
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		queued = c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, "queued")})
	})
	wg.Wait()
	close(gated.gate)
	// Let the transaction that waited finish, and anything queued after it
	// be taken: an event (the queues are empty), not a guessed while.
	waitUntil(t, "the taken request to commit", func() bool { return keyCount(t, f, "taken") == 1 })
	waitUntil(t, "the Committer's queues to empty", func() bool { return invoice.PendingOf(c) == 0 })
	if r := c.Issue(t.Context(), invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, "last")}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if !errors.Is(taken.Err, invoice.ErrOutcomeUnknown) {
		t.Errorf("caller gave up inside the transaction: %v, want commit_outcome_unknown (it committed)", taken.Err)
	}
	if queued.Err == nil || errors.Is(queued.Err, invoice.ErrOutcomeUnknown) {
		t.Errorf("caller gave up in the queue: %v, want its deadline", queued.Err)
	}
	if n := keyCount(t, f, "queued"); n != 0 {
		t.Errorf("the request whose caller gave up in the queue was issued afterwards (%d invoice)", n)
	}
	checkContiguous(t, serialsOf(t, f), 3)
}

// TestExhaustionIssuesWhatIsLeftInArrivalOrder: a {SEQ:1} series at serial
// 6 gets five requests, four of them batched together; the three numbers
// left go to the first three in arrival order and only the last two are
// refused. A {SEQ:2} series gets a burst of 120 in a fresh year: 99 are
// issued, 21 refused.
func TestExhaustionIssuesWhatIsLeftInArrivalOrder(t *testing.T) {
	t.Parallel()
	for _, strategy := range strategies {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			ctx := t.Context()
			mk := func(code, format string) gst.Series {
				s, err := series.CreateSeries(ctx, f.pool, series.NewSeries{SellerID: f.seller.ID, Code: code, DocType: "invoice", Format: format})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			nine, hundred := mk("N9", "N9/{FY}/{SEQ:1}"), mk("H99", "H99/{FY}/{SEQ:2}")
			gated := &gatedPool{Pool: f.pool, gate: make(chan struct{})}
			cfg := testfactory.Config(t, invoice.Config{Now: func() time.Time { return now }, Options: series.Options{LockTimeout: 20 * time.Second}})
			c := mustCommitter(invoice.NewCommitter(gated, cfg))
			if strategy == "plain" {
				c = mustCommitter(invoice.NewPlainCommitter(gated, cfg))
			}
			draft := func(s gst.Series, key string) document.Draft {
				d, err := document.Prepare(document.Request{Items: []document.ItemInput{chai("1", "10", "5")}}, f.seller, s, now, document.Policy{})
				if err != nil {
					t.Fatal(err)
				}
				d.IdempotencyKey, d.RequestHash = key, []byte(key)
				return d
			}
			for i := range 6 {
				if r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: nine, Draft: draft(nine, fmt.Sprint("pre", i))}); r.Err != nil {
					t.Fatal(r.Err)
				}
			}
			if r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, "ch1")}); r.Err != nil {
				t.Fatal(r.Err)
			}
			// Hold the drainer's first transaction back, then queue the
			// rest in arrival order.
			gated.armed.Store(true)
			release := sync.OnceFunc(func() { close(gated.gate) })
			t.Cleanup(release)
			results := make([]invoice.Result, 5)
			burst := make([]invoice.Result, 120)
			var wg sync.WaitGroup
			wg.Go(func() {
				results[0] = c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: nine, Draft: draft(nine, "r0")})
			})
			waitUntil(t, "the first transaction", func() bool { return gated.waiting.Load() == 1 })
			for i := 1; i < 5; i++ {
				wg.Go(func() {
					results[i] = c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: nine, Draft: draft(nine, fmt.Sprint("r", i))})
				})
				waitUntil(t, "the queue", func() bool { return invoice.PendingOf(c) == i })
			}
			for i := range burst {
				wg.Go(func() {
					burst[i] = c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: hundred, Draft: draft(hundred, fmt.Sprint("b", i))})
				})
				waitUntil(t, "the queue", func() bool { return invoice.PendingOf(c) == 4+i+1 })
			}
			release()
			wg.Wait()
			for i, r := range results {
				want := int64(7 + i)
				switch {
				case want <= 9 && (r.Err != nil || r.Invoice.Serial != want):
					t.Errorf("N9 request %d in arrival order: serial %d, %v; want serial %d", i, r.Invoice.Serial, r.Err, want)
				case want > 9 && !errors.Is(r.Err, gst.ErrExhausted):
					t.Errorf("N9 request %d in arrival order: serial %d, %v; want series_exhausted", i, r.Invoice.Serial, r.Err)
				}
			}
			for i, r := range burst {
				want := int64(1 + i)
				switch {
				case want <= 99 && (r.Err != nil || r.Invoice.Serial != want):
					t.Fatalf("H99 request %d in arrival order: serial %d, %v; want serial %d", i, r.Invoice.Serial, r.Err, want)
				case want > 99 && !errors.Is(r.Err, gst.ErrExhausted):
					t.Fatalf("H99 request %d in arrival order: serial %d, %v; want series_exhausted", i, r.Invoice.Serial, r.Err)
				}
			}
			checkContiguous(t, f.serialsOfSeries(t, nine), 9)
			checkContiguous(t, f.serialsOfSeries(t, hundred), 99)
			verifyChains(t, f)
		})
	}
}

// gatedPool is a pool whose connections, once it is armed, are handed out
// only once gate is closed: the Committer's first transaction waits, and
// requests queue behind it in a known order.
type gatedPool struct {
	*pgxpool.Pool
	gate    chan struct{}
	armed   atomic.Bool
	waiting atomic.Int64
}

func (g *gatedPool) Acquire(ctx context.Context) (*pgxpool.Conn, error) {
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	return g.Pool.Acquire(ctx)
}

// Begin is gated as Acquire is (a plain Committer's transactions).
func (g *gatedPool) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	return g.Pool.Begin(ctx)
}

// wait waits for the gate once g is armed; it fails when ctx ends first.
func (g *gatedPool) wait(ctx context.Context) error {
	if !g.armed.Load() {
		return nil
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case <-g.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// overlapCounter is a Beginner (not a pool: the Committer then runs plain
// transactions) that records how many transactions are open at once.
type overlapCounter struct {
	db   db.Beginner
	open atomic.Int64
	max  atomic.Int64
}

func (o *overlapCounter) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := o.db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	n := o.open.Add(1)
	for m := o.max.Load(); n > m && !o.max.CompareAndSwap(m, n); m = o.max.Load() {
	}
	return &countedTx{Tx: tx, o: o}, nil
}

type countedTx struct {
	pgx.Tx
	o    *overlapCounter
	once sync.Once
}

func (t *countedTx) end() { t.once.Do(func() { t.o.open.Add(-1) }) }

func (t *countedTx) Commit(ctx context.Context) error {
	defer t.end()
	return t.Tx.Commit(ctx)
}

func (t *countedTx) Rollback(ctx context.Context) error {
	defer t.end()
	return t.Tx.Rollback(ctx)
}

// TestOneTransactionPerCounterRow: with two batches in flight, two invoice
// dates queued for one series, a held row that makes shared batches split
// and the row be batched alone, and members that fail and are retried
// alone, no two transactions of the Committer on
// one counter row are ever open at once; so a later date can never commit
// before an earlier one that arrived first, and no valid date is refused
// date_out_of_order by the Committer's own reordering.
func TestOneTransactionPerCounterRow(t *testing.T) {
	t.Parallel()
	f := setup(t)
	oc := &overlapCounter{db: f.pool}
	c := mustCommitter(invoice.NewPlainCommitter(oc, testfactory.Config(t, invoice.Config{InFlight: 2, Now: func() time.Time { return now },
		Options: series.Options{LockTimeout: 10 * time.Second}})))
	yesterday := gst.DateIST(now).AddDate(0, 0, -1)
	ctx := t.Context()
	// The counter row exists and is held by another transaction for a
	// while, so that the first shared batches wait past their 250 ms,
	// are split and retried in the background, and the row is batched
	// alone (its own drainer) for the next seconds.
	if r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, "first")}); r.Err != nil {
		t.Fatal(r.Err)
	}
	release := holdRow(t, f, f.s)
	time.AfterFunc(600*time.Millisecond, release)
	const clients, each = 16, 12
	var wg sync.WaitGroup
	var refused, issued atomic.Int64
	for w := range clients {
		wg.Go(func() {
			for i := range each {
				d, err := document.Prepare(document.Request{InvoiceDate: yesterday, Items: []document.ItemInput{chai("1", "10", "5")}}, f.seller, f.s, now, document.Policy{BackdateDays: 3})
				if w%2 == 1 {
					d, err = document.Prepare(document.Request{Items: []document.ItemInput{chai("1", "10", "5")}}, f.seller, f.s, now, document.Policy{})
				}
				if err != nil {
					t.Error(err)
					return
				}
				d.IdempotencyKey, d.RequestHash = fmt.Sprintf("w%d-%d", w, i), []byte("h")
				if i == 5 && w < 4 {
					d.IdempotencyKey = "bad\x00key" // fails its batch: members are retried alone
				}
				r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: d})
				if errors.Is(r.Err, series.ErrDateOutOfOrder) {
					refused.Add(1)
				}
				// Every answer is one the request may get: a bad key
				// fails (its batch's others are retried alone); only
				// yesterday's date may be refused, once today's is in
				// (today's date is never out of order, so refusing it
				// could only be the Committer's own reordering); nothing
				// else fails.
				bad := d.IdempotencyKey == "bad\x00key"
				switch {
				case bad && r.Err == nil:
					t.Errorf("w%d-%d: the bad key was issued %s", w, i, r.Invoice.Number)
				case bad:
				case errors.Is(r.Err, series.ErrDateOutOfOrder) && w%2 == 1:
					t.Errorf("w%d-%d: today's date refused: %v", w, i, r.Err)
				case errors.Is(r.Err, series.ErrDateOutOfOrder):
				case r.Err != nil:
					t.Errorf("w%d-%d: %v", w, i, r.Err)
				default:
					issued.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if m := oc.max.Load(); m > 1 {
		t.Errorf("%d transactions of one counter row were open at once, want 1", m)
	}
	if st := c.Stats(); st.Retries == 0 {
		t.Errorf("no batch was split and retried: %+v", st)
	}
	serials := serialsOf(t, f)
	checkContiguous(t, serials, len(serials))
	t.Logf("%d issued, %d refused date_out_of_order, stats %+v", len(serials), refused.Load(), c.Stats())
	if n := int64(len(serials)) - 1; issued.Load() != n { // the first is issued before the clients
		t.Errorf("%d requests answered issued, %d invoices stored after the first", issued.Load(), n)
	}
	// A later date never committed before an earlier one: by serial, the
	// dates never go back.
	rows, err := f.pool.Query(ctx, `SELECT serial, invoice_date FROM invoices WHERE seller_id = $1 AND series_id = $2 ORDER BY serial`, f.seller.ID, f.s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for rows.Next() {
		var serial int64
		var day time.Time
		if err := rows.Scan(&serial, &day); err != nil {
			t.Fatal(err)
		}
		if day.Before(last) {
			t.Errorf("serial %d dated %s after an invoice dated %s", serial, day.Format(time.DateOnly), last.Format(time.DateOnly))
		}
		last = day
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// commitFails is a Beginner whose transactions fail COMMIT with err after
// rolling back: the answer of a server that went away while committing.
type commitFails struct {
	db  db.Beginner
	err error
}

func (c commitFails) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := c.db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return failingCommit{tx, c.err}, nil
}

type failingCommit struct {
	pgx.Tx
	err error
}

func (f failingCommit) Commit(ctx context.Context) error {
	f.Rollback(ctx)
	return f.err
}

// TestCommitErrorOnAPlainConnectionIsAnUnknownOutcome: with a database
// that is not a pool (library use), a COMMIT that fails with anything but
// a definite rollback (here a FATAL of a server that reports severities in
// Russian) may have committed: the answer is ErrOutcomeUnknown.
func TestCommitErrorOnAPlainConnectionIsAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, tc := range []struct {
		name    string
		err     error
		unknown bool
	}{
		{"fatal, localized", &pgconn.PgError{Severity: "ВАЖНО", SeverityUnlocalized: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}, true},
		{"panic", &pgconn.PgError{Severity: "PANIC", SeverityUnlocalized: "PANIC", Code: "XX000"}, true},
		{"io", errors.New("read tcp: connection reset by peer"), true},
		{"rolled back", pgx.ErrTxCommitRollback, false},
		{"statement error", &pgconn.PgError{Severity: "ОШИБКА", SeverityUnlocalized: "ERROR", Code: "40001", Message: "could not serialize access"}, false},
	} {
		c := mustCommitter(invoice.NewPlainCommitter(commitFails{f.pool, tc.err}, testfactory.Config(t, invoice.Config{Now: func() time.Time { return now }})))
		r := c.Issue(t.Context(), invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: f.draft(t, tc.name)})
		if got := errors.Is(r.Err, invoice.ErrOutcomeUnknown); got != tc.unknown || r.Err == nil {
			t.Errorf("%s: %v; want outcome unknown %v", tc.name, r.Err, tc.unknown)
		}
	}
}
