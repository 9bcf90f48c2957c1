package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
)

// chainCheck is serve's background verification (--verify-interval): what
// `invoiced verify` does, for every seller, with the result in the metrics
// (invoiced_chain_*) so that an alert fires on a broken chain without
// anyone running the command.
type chainCheck struct {
	pool    *pgxpool.Pool
	logger  *slog.Logger
	metrics *metrics.Metrics
	now     func() time.Time
}

// chainCheckFirst is how long after start the first verification runs: not
// at once, so a restart under load does not add a full read of the
// database to its first minute.
const chainCheckFirst = time.Minute

// loop verifies after first and then every interval until ctx ends.
func (v chainCheck) loop(ctx context.Context, first, interval time.Duration) {
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, _ = v.once(ctx) // once logs and counts its failures itself
		t.Reset(interval)
	}
}

// once verifies every seller, each in a REPEATABLE READ transaction of its
// own, and records the result. It returns how many series-years had a
// finding, or the error that stopped it (logged and counted as failed).
func (v chainCheck) once(ctx context.Context) (int, error) {
	began := v.now()
	broken, err := v.verifyAll(ctx)
	if err != nil {
		if ctx.Err() == nil {
			v.metrics.ChainVerifyFailed()
			v.logger.Warn("chain verification failed", "err", err)
		}
		return 0, err
	}
	end := v.now()
	v.metrics.ChainVerified(broken, end.Sub(began), end)
	if broken > 0 {
		v.logger.Error("chain verification found breaks; run `invoiced verify --gstin GSTIN` for each seller to see them", "broken_series_years", broken)
	} else {
		v.logger.Info("chain verification: intact", "took", end.Sub(began).Round(time.Millisecond).String())
	}
	return broken, nil
}

// verifyAll returns the number of series-years with a finding over every
// seller, and fails when the database does.
func (v chainCheck) verifyAll(ctx context.Context) (int, error) {
	sellers, err := series.Sellers(ctx, v.pool)
	if err != nil {
		return 0, err
	}
	broken := 0
	for _, s := range sellers {
		rep, err := reports.Verify(ctx, v.pool, s, "", 0)
		if err != nil {
			return 0, fmt.Errorf("verify %s: %w", s.GSTIN, err)
		}
		for _, c := range rep.Chains {
			if !c.OK() {
				broken++
			}
		}
	}
	return broken, nil
}
