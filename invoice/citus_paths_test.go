//go:build citus

package invoice_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/lease"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// citusSellers makes n sellers with a series each, whose shard groups lie
// on both workers (the test fails otherwise), on a fresh Citus database.
func citusSellers(t *testing.T, pool *pgxpool.Pool, n int) ([]gst.Seller, []gst.Series) {
	t.Helper()
	sellers, ss := make([]gst.Seller, n), make([]gst.Series, n)
	workers := map[int]bool{}
	for i := range n {
		gstin := testfactory.GSTIN(t, fmt.Sprintf("29AAPFU%04dF1Z", i))
		sellers[i] = testfactory.Seller(t, pool, &testfactory.SellerOpts{GSTIN: gstin})
		ss[i] = testfactory.Series(t, pool, sellers[i], nil)
		workers[workerOf(t, pool, sellers[i].ID)] = true
	}
	if len(workers) != 2 {
		t.Fatalf("the sellers' shard groups lie on %d workers, want 2", len(workers))
	}
	return sellers, ss
}

// subscribe registers a webhook of seller for both event types.
func subscribe(t *testing.T, pool *pgxpool.Pool, seller gst.Seller) {
	t.Helper()
	if _, err := pool.Exec(t.Context(), `INSERT INTO webhooks (public_id, seller_id, url, events, secret)
		VALUES ($1, $2, 'https://hooks.example/in', '{invoice.issued,invoice.cancelled}', 'secret')`,
		fmt.Sprintf("wh_test_%d", seller.ID), seller.ID); err != nil {
		t.Fatal(err)
	}
}

func requireCitus(t *testing.T) {
	t.Helper()
	dbtest.RequireCitus(t)
}

// TestCitusKeysEventsBatchesAndCancelsAreSingleShard: on sellers of both
// workers, half of them subscribed to webhooks, every path that writes
// issues on one shard: single requests with idempotency keys (and their
// replays) through the batching Committer, the batch route's IssueBatch,
// a Committer of plain transactions (NewPlainCommitter), and
// cancellations with keys. pg_dist_transaction gains no record, each
// series holds exactly 1..N, and the outbox holds one event (with one
// delivery) per issue and cancel of a subscribed seller, none for the
// others.
func TestCitusKeysEventsBatchesAndCancelsAreSingleShard(t *testing.T) {
	requireCitus(t)
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	sellers, ss := citusSellers(t, pool, 8)
	for i := 0; i < len(sellers); i += 2 {
		subscribe(t, pool, sellers[i])
	}
	batching, err := invoice.NewCommitter(pool, invoice.Config{Citus: true, InFlight: 4})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := invoice.NewPlainCommitter(pool, invoice.Config{Citus: true})
	if err != nil {
		t.Fatal(err)
	}
	before := twoPhase(t, pool)

	const singles, batch, solo = 4, 5, 2
	issued := make([][]document.Invoice, len(sellers))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range sellers {
		for k := range singles {
			wg.Go(func() {
				d := testfactory.Draft(t, sellers[i], ss[i], now, nil)
				d.IdempotencyKey, d.RequestHash = fmt.Sprintf("key-%d", k), []byte{byte(k)}
				r := batching.Issue(ctx, invoice.IssueRequest{Seller: sellers[i], Series: ss[i], Draft: d})
				if r.Err != nil {
					t.Errorf("seller %d: %v", sellers[i].ID, r.Err)
					return
				}
				// The same request again replays it.
				again := batching.Issue(ctx, invoice.IssueRequest{Seller: sellers[i], Series: ss[i], Draft: d})
				if again.Err != nil || !again.Replayed || again.Invoice.ID != r.Invoice.ID {
					t.Errorf("seller %d: replay of key-%d: %+v, want invoice %d replayed", sellers[i].ID, k, again, r.Invoice.ID)
				}
				mu.Lock()
				issued[i] = append(issued[i], r.Invoice)
				mu.Unlock()
			})
		}
		wg.Go(func() {
			reqs := make([]invoice.IssueRequest, batch)
			for j := range reqs {
				reqs[j] = invoice.IssueRequest{Seller: sellers[i], Series: ss[i], Draft: testfactory.Draft(t, sellers[i], ss[i], now, nil)}
			}
			for _, r := range batching.IssueBatch(ctx, reqs) {
				if r.Err != nil {
					t.Errorf("seller %d: batch: %v", sellers[i].ID, r.Err)
				}
			}
		})
		wg.Go(func() {
			for range solo {
				r := plain.Issue(ctx, invoice.IssueRequest{Seller: sellers[i], Series: ss[i], Draft: testfactory.Draft(t, sellers[i], ss[i], now, nil)})
				if r.Err != nil {
					t.Errorf("seller %d: without batching: %v", sellers[i].ID, r.Err)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Cancel one invoice of each seller, with a key, concurrently.
	for i := range sellers {
		wg.Go(func() {
			req := invoice.CancelRequest{ID: issued[i][0].ID, Reason: "wrong buyer", IdempotencyKey: "cancel-1", RequestHash: []byte("c1")}
			if _, _, err := invoice.CancelOnce(ctx, pool, sellers[i], req, time.Now(), series.Options{LockTimeout: 5 * time.Second}); err != nil {
				t.Errorf("seller %d: cancel: %v", sellers[i].ID, err)
			}
			if _, replayed, err := invoice.CancelOnce(ctx, pool, sellers[i], req, time.Now(), series.Options{}); err != nil || !replayed {
				t.Errorf("seller %d: cancel again: replayed %v, %v; want a replay", sellers[i].ID, replayed, err)
			}
		})
	}
	wg.Wait()
	if got := twoPhase(t, pool) - before; got != 0 {
		t.Errorf("issuing and cancelling made %d two-phase commit records, want 0", got)
	}
	const each = singles + batch + solo
	for i, s := range sellers {
		var n, lo, hi, distinct, events, cancels, deliveries, keys int64
		if err := pool.QueryRow(ctx, `SELECT count(*), min(serial), max(serial), count(DISTINCT serial),
				count(*) FILTER (WHERE status = 'cancelled') FROM invoices WHERE seller_id = $1`, s.ID).
			Scan(&n, &lo, &hi, &distinct, &cancels); err != nil {
			t.Fatal(err)
		}
		if n != each || lo != 1 || hi != each || distinct != each || cancels != 1 {
			t.Errorf("seller %d: %d invoices, serials %d..%d (%d distinct), %d cancelled; want exactly 1..%d, 1 cancelled", s.ID, n, lo, hi, distinct, cancels, each)
		}
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM events WHERE seller_id = $1),
				(SELECT count(*) FROM webhook_deliveries WHERE seller_id = $1),
				(SELECT count(*) FROM idempotency_keys WHERE seller_id = $1)`, s.ID).Scan(&events, &deliveries, &keys); err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if i%2 == 0 {
			want = each + 1 // every issue and the cancel
		}
		if events != want || deliveries != want {
			t.Errorf("seller %d: %d events, %d deliveries; want %d of each", s.ID, events, deliveries, want)
		}
		if keys != singles+1 {
			t.Errorf("seller %d: %d idempotency keys, want %d", s.ID, keys, singles+1)
		}
		var chain, length int64
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM chain_records WHERE seller_id = $1),
				(SELECT chain_length FROM series_counters WHERE seller_id = $1)`, s.ID).Scan(&chain, &length); err != nil {
			t.Fatal(err)
		}
		if chain != each+1 || length != chain {
			t.Errorf("seller %d: %d chain records, chain length %d; want %d", s.ID, chain, length, each+1)
		}
	}
}

// TestCitusLeaseWaitsForAnIssueInFlight: on Citus the lease guard runs on
// the worker that holds the seller's shard group; taking a lease must
// still wait for an issuing transaction that passed the guard and has not
// committed, and start after its serial; an issue after the lease is
// refused (series.ErrLeased). Neither is a two-phase commit.
func TestCitusLeaseWaitsForAnIssueInFlight(t *testing.T) {
	requireCitus(t)
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	sellers, ss := citusSellers(t, pool, 4)
	before := twoPhase(t, pool)
	for i := range sellers {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }() // after Commit, nothing to undo
		at := time.Now()
		d := testfactory.Draft(t, sellers[i], ss[i], at, nil)
		if _, err := invoice.IssueTx(ctx, tx, sellers[i], ss[i], []document.Draft{d}, at, series.Options{Routed: true}); err != nil {
			t.Fatal(err)
		}
		leased := make(chan error, 1)
		var l lease.Lease
		go func() {
			var err error
			l, err = lease.TakeLease(ctx, pool, ss[i], "till-1", "test", at)
			leased <- err
		}()
		select {
		case err := <-leased:
			t.Fatalf("seller %d: the lease did not wait for the issue in flight (%v)", sellers[i].ID, err)
		case <-time.After(time.Second):
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-leased; err != nil {
			t.Fatal(err)
		}
		if l.Next.Serial != 2 {
			t.Errorf("seller %d: the lease starts at serial %d, want 2 (after the issue it waited for)", sellers[i].ID, l.Next.Serial)
		}
		_, err = invoice.Issue(ctx, pool, sellers[i], ss[i], testfactory.Draft(t, sellers[i], ss[i], at, nil), at, series.Options{Routed: true})
		if !errors.Is(err, series.ErrLeased) {
			t.Errorf("seller %d: an issue after the lease: %v, want ErrLeased", sellers[i].ID, err)
		}
	}
	if got := twoPhase(t, pool) - before; got != 0 {
		t.Errorf("issuing and leasing made %d two-phase commit records, want 0", got)
	}
}

// TestCitusPeriodLockWaitsForABackdatedIssue: locking a month waits for
// a backdated issue in flight (the seller's period lock, taken on the
// worker), and a backdated issue after it is refused.
func TestCitusPeriodLockWaitsForABackdatedIssue(t *testing.T) {
	requireCitus(t)
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	sellers, ss := citusSellers(t, pool, 4)
	at := time.Now()
	last := time.Date(at.Year(), at.Month(), 1, 12, 0, 0, 0, time.UTC).AddDate(0, -1, 0) // last month
	for i := range sellers {
		err := db.InTx(ctx, pool, func(tx pgx.Tx) error {
			d := testfactory.Draft(t, sellers[i], ss[i], last, nil)
			if _, err := invoice.IssueTx(ctx, tx, sellers[i], ss[i], []document.Draft{d}, at, series.Options{Routed: true}); err != nil {
				return err
			}
			locked := make(chan error, 1)
			go func() {
				_, _, err := invoice.LockPeriod(ctx, pool, sellers[i], document.MonthOf(last), "test", at)
				locked <- err
			}()
			select {
			case err := <-locked:
				return fmt.Errorf("the period lock did not wait for the backdated issue in flight (%v)", err)
			case <-time.After(time.Second):
			}
			go func() { <-locked }()
			return nil
		})
		if err != nil {
			t.Fatalf("seller %d: %v", sellers[i].ID, err)
		}
		// The lock commits once the issue has; then a backdated issue is refused.
		testwait.Until(t, 10*time.Second, func() bool {
			locks, err := invoice.PeriodLocks(ctx, pool, sellers[i].ID)
			return err == nil && len(locks) == 1
		}, "seller %d's month locked", sellers[i].ID)
		_, err = invoice.Issue(ctx, pool, sellers[i], ss[i], testfactory.Draft(t, sellers[i], ss[i], last, nil), at, series.Options{Routed: true})
		if !errors.Is(err, invoice.ErrPeriodLocked) {
			t.Errorf("seller %d: a backdated issue into a locked month: %v, want ErrPeriodLocked", sellers[i].ID, err)
		}
	}
}

// TestCitusLockTimeoutReachesTheWorker: the counter row's lock is waited
// for on the worker; Options.LockTimeout must end that wait there
// (series.ErrLockTimeout), not hang until the holder commits.
func TestCitusLockTimeoutReachesTheWorker(t *testing.T) {
	requireCitus(t)
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	sellers, ss := citusSellers(t, pool, 2)
	at := time.Now()
	for i := range sellers {
		first, err := invoice.Issue(ctx, pool, sellers[i], ss[i], testfactory.Draft(t, sellers[i], ss[i], at, nil), at, series.Options{Routed: true})
		if err != nil {
			t.Fatal(err)
		}
		holder, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := series.LockChain(ctx, holder, sellers[i].ID, ss[i].ID, first.FY, series.Options{}); err != nil {
			t.Fatal(err)
		}
		opt := series.Options{LockTimeout: 300 * time.Millisecond, Routed: true}
		began := time.Now()
		_, err = invoice.Issue(ctx, pool, sellers[i], ss[i], testfactory.Draft(t, sellers[i], ss[i], at, nil), at, opt)
		if !errors.Is(err, series.ErrLockTimeout) || time.Since(began) > 5*time.Second {
			t.Errorf("seller %d: issue behind a held counter row: %v after %v, want ErrLockTimeout after about %v", sellers[i].ID, err, time.Since(began), opt.LockTimeout)
		}
		_, err = invoice.Cancel(ctx, pool, sellers[i], first.ID, "typo", at, opt)
		if !errors.Is(err, series.ErrLockTimeout) {
			t.Errorf("seller %d: cancel behind a held counter row: %v, want ErrLockTimeout", sellers[i].ID, err)
		}
		if err := holder.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
