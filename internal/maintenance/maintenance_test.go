package maintenance

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/console"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/internal/testwait"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/lease"
	"github.com/invoiced/invoiced/series"
	"github.com/invoiced/invoiced/webhook/outbox"
)

// wait returns the outcome of the service's next run, or fails the test
// when none comes within a minute (a run on a loaded machine takes
// milliseconds).
func (s *testSignal[R]) wait(t *testing.T) (R, error) {
	t.Helper()
	select {
	case o := <-s.ran:
		return o.result, o.err
	case <-time.After(time.Minute):
		t.Fatal("no run of the service within a minute")
		panic("unreachable")
	}
}

// TestKeyPurgeKeepsTheRetention: keys older than the retention go, in
// batches, every one of them and no younger one, and the metric counts
// them.
func TestKeyPurgeKeepsTheRetention(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	testfactory.Seller(t, pool, nil)
	ctx := t.Context()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	const minKeyRetention = 7 * 24 * time.Hour
	// 2,500 keys 8 days old, 30 keys 6 days old, all of seller 1.
	_, err := pool.Exec(ctx, `INSERT INTO idempotency_keys (seller_id, key, request_hash, invoice_id, created_at)
		SELECT (SELECT id FROM sellers LIMIT 1), 'k' || g, '\x00', g, $1::timestamptz - CASE WHEN g <= 2500 THEN interval '8 days' ELSE interval '6 days' END
		FROM generate_series(1, 2530) g`, now)
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	p := NewKeyPurger(pool, minKeyRetention, Config{Metrics: m, Now: func() time.Time { return now }})
	res, err := p.runOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Deleted; n != 2500 {
		t.Fatalf("purge deleted %d keys, want the 2500 older than 7 days", n)
	}
	var left, old int
	pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE created_at < $1) FROM idempotency_keys`, now.Add(-minKeyRetention)).Scan(&left, &old)
	if left != 30 || old != 0 {
		t.Fatalf("after the purge: %d keys, %d of them old; want the 30 young ones", left, old)
	}
	got, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if got["invoiced_idempotency_keys_purged_total"] != 2500 {
		t.Fatalf("invoiced_idempotency_keys_purged_total = %v, want 2500", got["invoiced_idempotency_keys_purged_total"])
	}
	if res, err := p.runOnce(ctx); err != nil || res.Deleted != 0 {
		t.Fatalf("a second purge deleted %d (%v)", res.Deleted, err)
	}
}

// TestLoopRunsAtOnceAndEveryInterval: a service's loop runs it after the
// first delay (here none) and again after each interval, logs a run that
// did something, and returns when its context ends.
func TestLoopRunsAtOnceAndEveryInterval(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	testfactory.Seller(t, pool, nil)
	now := time.Now()
	if _, err := pool.Exec(t.Context(), `INSERT INTO idempotency_keys (seller_id, key, request_hash, invoice_id, created_at)
		SELECT (SELECT id FROM sellers LIMIT 1), 'k' || g, '\x00', g, $1::timestamptz - interval '8 days' FROM generate_series(1, 5) g`, now); err != nil {
		t.Fatal(err)
	}
	var logs testwait.Buffer
	p := NewKeyPurger(pool, 7*24*time.Hour, Config{Interval: time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	p.signals.init()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { p.Loop(ctx); close(done) }()
	if res, err := p.signals.wait(t); err != nil || res.Deleted != 5 {
		t.Fatalf("first run: %d deleted (%v), want the 5 old keys", res.Deleted, err)
	}
	if res, err := p.signals.wait(t); err != nil || res.Deleted != 0 {
		t.Fatalf("second run: %d deleted (%v), want none", res.Deleted, err)
	}
	cancel()
	<-done
	if out := logs.String(); strings.Count(out, "purged idempotency keys") != 1 || !strings.Contains(out, "deleted=5") {
		t.Fatalf("the runs logged %q; want one line for the 5 keys deleted", out)
	}
}

// TestLoopLogsAndCountsAFailedRun: a run that fails (the database is
// gone) is logged as a warning and counted in the service's failure
// metric, and the loop goes on to the next run.
func TestLoopLogsAndCountsAFailedRun(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	pool.Close()
	var logs testwait.Buffer
	m := metrics.New()
	v := NewChainChecker(pool, Config{FirstDelay: time.Nanosecond, Interval: time.Millisecond, Metrics: m, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	v.signals.init()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { v.Loop(ctx); close(done) }()
	for range 2 {
		if _, err := v.signals.wait(t); err == nil {
			t.Fatal("a chain check on a closed pool did not fail")
		}
	}
	cancel()
	<-done
	if out := logs.String(); !strings.Contains(out, "level=WARN msg=\"chain verification failed\" err=") {
		t.Fatalf("the failed runs logged %q, want a warning", out)
	}
	got, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if got["invoiced_chain_verify_runs_total"] < 2 {
		t.Fatalf("invoiced_chain_verify_runs_total = %v after two failed runs, want at least 2", got["invoiced_chain_verify_runs_total"])
	}
}

// TestChainCheckReportsABreak: the background verification counts an
// intact database as intact and, after an invoice's amount is edited in
// the database, one broken series-year.
func TestChainCheckReportsABreak(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	seller := testfactory.Seller(t, pool, nil)
	s := testfactory.Series(t, pool, seller, nil)
	now := time.Now()
	for range 3 {
		if _, err := invoice.Issue(ctx, pool, seller, s, testfactory.Draft(t, seller, s, now, nil), now, testfactory.Options(t, series.Options{})); err != nil {
			t.Fatalf("issue: %v", err)
		}
	}
	m := metrics.New()
	v := NewChainChecker(pool, Config{Metrics: m})
	if res, err := v.runOnce(ctx); err != nil || res.Broken != 0 {
		t.Fatalf("intact database: %d broken, %v", res.Broken, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE invoices SET total = total + 1000 WHERE serial = 2`); err != nil {
		t.Fatal(err)
	}
	if res, err := v.runOnce(ctx); err != nil || res.Broken != 1 {
		t.Fatalf("after editing an amount: %d broken, %v; want 1", res.Broken, err)
	}
	got, _ := m.Gather()
	if got["invoiced_chain_broken_series_years"] != 1 || got["invoiced_chain_verify_runs_total"] != 2 || got["invoiced_chain_verify_last_completed_timestamp_seconds"] == 0 {
		t.Fatalf("chain metrics after one intact and one broken run: %v", got)
	}
}

// TestSessionPurgeDeletesExpiredSessions: the console's sessions idle
// longer than console.IdleTimeout or older than console.AbsoluteTimeout
// go; a live one stays.
func TestSessionPurgeDeletesExpiredSessions(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	seller := testfactory.Seller(t, pool, nil)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, ages := range [][2]time.Duration{ // created, last seen: before now
		{time.Hour, time.Minute},                                       // live
		{time.Hour, console.IdleTimeout + time.Minute},                 // idle too long
		{console.AbsoluteTimeout + time.Minute, time.Minute},           // too old
		{console.AbsoluteTimeout + time.Hour, console.AbsoluteTimeout}, // both
	} {
		if _, err := pool.Exec(ctx, `INSERT INTO console_sessions (id_hash, seller_id, key_prefix, csrf_token, created_at, last_seen_at)
			VALUES (sha256(($1::int)::text::bytea), $2, 'k', 'c', $3, $4)`, i, seller.ID, now.Add(-ages[0]), now.Add(-ages[1])); err != nil {
			t.Fatal(err)
		}
	}
	con := console.New(console.Config{Pool: pool, Keys: api.New(api.Config{Pool: pool}), Now: func() time.Time { return now }})
	p := NewSessionPurger(con, Config{})
	if res, err := p.runOnce(ctx); err != nil || res.Deleted != 3 {
		t.Fatalf("session purge deleted %d (%v), want the 3 expired ones", res.Deleted, err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM console_sessions`).Scan(&left); err != nil || left != 1 {
		t.Fatalf("%d sessions left (%v), want the live one", left, err)
	}
}

// TestEventPurgeKeepsTheRetention: webhook events older than
// outbox.EventRetention go with their deliveries, in batches; younger
// ones stay; the metric counts them.
func TestEventPurgeKeepsTheRetention(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	seller := testfactory.Seller(t, pool, nil)
	s := testfactory.Series(t, pool, seller, nil)
	if _, err := outbox.CreateWebhook(ctx, pool, seller.ID, "http://127.0.0.1:9/never", []string{invoice.EventIssued}, "whsec_test"); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, gst.IST)
	for range 5 {
		if _, err := invoice.Issue(ctx, pool, seller, s, testfactory.Draft(t, seller, s, now, nil), now, testfactory.Options(t, series.Options{})); err != nil {
			t.Fatalf("issue: %v", err)
		}
	}
	// Three of the five events (and their deliveries) past the retention.
	if _, err := pool.Exec(ctx, `UPDATE events SET created_at = $1
		WHERE seller_id = $2 AND id IN (SELECT id FROM events WHERE seller_id = $2 ORDER BY id LIMIT 3)`,
		now.Add(-outbox.EventRetention-time.Hour), seller.ID); err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	p := NewEventPurger(pool, Config{Batch: 2, Metrics: m, Now: func() time.Time { return now }})
	if res, err := p.runOnce(ctx); err != nil || res.Deleted != 3 {
		t.Fatalf("event purge deleted %d (%v), want the 3 past the retention", res.Deleted, err)
	}
	var events, deliveries int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM webhook_deliveries)`).Scan(&events, &deliveries); err != nil || events != 2 || deliveries != 2 {
		t.Fatalf("%d events and %d deliveries left (%v), want 2 and 2", events, deliveries, err)
	}
	if got, err := m.Gather(); err != nil || got["invoiced_events_purged_total"] != 3 {
		t.Fatalf("invoiced_events_purged_total = %v (%v), want 3", got["invoiced_events_purged_total"], err)
	}
}

// TestChainCheckCountsNoSettledLeaseAsBroken: a lost till's lease ended
// by force and settled through the paper roll's last serial leaves its
// serials declared in the chain: the background check counts no broken
// series-year, so InvoicedChainBroken does not fire (issue 39: it fired
// for good after docs/offline.md's procedure).
func TestChainCheckCountsNoSettledLeaseAsBroken(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := t.Context()
	seller := testfactory.Seller(t, pool, nil)
	s := testfactory.Series(t, pool, seller, nil)
	now := time.Now()
	if _, err := invoice.Issue(ctx, pool, seller, s, testfactory.Draft(t, seller, s, now, nil), now, testfactory.Options(t, series.Options{})); err != nil {
		t.Fatalf("issue: %v", err)
	}
	l, err := lease.TakeLease(ctx, pool, s, "till-7", "test", now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lease.ForceEndLease(ctx, pool, s, "till stolen", "cli", now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	declared := map[gst.FY]int64{}
	for i, fy := range l.Years() {
		declared[fy] = int64(3 * (1 - i)) // the paper roll: 2-3 in the first year, nothing in the next
	}
	if _, err := lease.SettleLeaseYears(ctx, pool, s, declared, "paper roll ends at 3", "cli", now.Add(3*time.Second), invoice.DeclarationSeal(seller.GSTIN)); err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	if res, err := NewChainChecker(pool, Config{Metrics: m}).runOnce(ctx); err != nil || res.Broken != 0 {
		t.Fatalf("after the settlement: %d broken, %v; want 0", res.Broken, err)
	}
	if got, _ := m.Gather(); got["invoiced_chain_broken_series_years"] != 0 {
		t.Fatalf("invoiced_chain_broken_series_years %v after the settlement", got["invoiced_chain_broken_series_years"])
	}
}
