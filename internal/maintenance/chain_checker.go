package maintenance

import (
	"context"
	"fmt"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/sellers"
	"time"
)

// Defaults of NewChainChecker's Config. The first check waits a minute so
// that a restart under load does not add a full read of the database to
// its first minute.
const (
	ChainCheckFirstDelay = time.Minute
	ChainCheckInterval   = 24 * time.Hour
)

// Pool is what the chain check reads through: queries, and transactions
// with options (REPEATABLE READ); a *pgxpool.Pool.
type Pool interface {
	db.Querier
	db.OptionsBeginner
}

// ChainChecker is serve's background verification (--verify-interval):
// what `invoiced verify` does, for every seller, with the result in the
// metrics (invoiced_chain_*) so that an alert fires on a broken chain
// without anyone running the command.
type ChainChecker struct {
	*service[ChainCheckResult]
	pool Pool
}

// ChainCheckResult is what one run of a ChainChecker found.
type ChainCheckResult struct {
	Broken int           // series-years with a finding
	Took   time.Duration // the run's duration
}

// NewChainChecker returns a ChainChecker of pool's sellers. cfg's zero
// fields mean: first after ChainCheckFirstDelay, then every
// ChainCheckInterval; Batch is unused. It panics on a Config withDefaults
// refuses.
func NewChainChecker(pool Pool, cfg Config) *ChainChecker {
	v := &ChainChecker{pool: pool}
	v.service = &service[ChainCheckResult]{
		cfg:     cfg.withDefaults(Config{Interval: ChainCheckInterval, FirstDelay: ChainCheckFirstDelay}),
		runOnce: v.runOnce,
		report: reporting[ChainCheckResult]{
			failed:      "chain verification failed",
			countFailed: (*metrics.Metrics).ChainVerifyFailed,
			succeeded: func(r ChainCheckResult) {
				if r.Broken > 0 {
					v.cfg.Logger.Error("chain verification found breaks; run `invoiced verify --gstin GSTIN` for each seller to see them", "broken_series_years", r.Broken)
				} else {
					v.cfg.Logger.Info("chain verification: intact", "took", r.Took.Round(time.Millisecond).String())
				}
			},
		},
	}
	return v
}

// runOnce verifies every seller, each in a REPEATABLE READ transaction of
// its own, and records the result in the metrics. It returns how many
// series-years had a finding, or the error that stopped it.
func (v *ChainChecker) runOnce(ctx context.Context) (ChainCheckResult, error) {
	began := v.cfg.Now()
	broken, err := v.verifyAll(ctx)
	if err != nil {
		return ChainCheckResult{}, err
	}
	end := v.cfg.Now()
	v.cfg.Metrics.ChainVerified(broken, end.Sub(began), end)
	return ChainCheckResult{Broken: broken, Took: end.Sub(began)}, nil
}

// verifyAll returns the number of series-years with a finding over every
// seller, and fails when the database does.
func (v *ChainChecker) verifyAll(ctx context.Context) (int, error) {
	sellers, err := sellers.All(ctx, v.pool)
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
