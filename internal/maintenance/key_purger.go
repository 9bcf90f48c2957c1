package maintenance

import (
	"context"
	"time"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/invoice"
)

// Defaults of NewKeyPurger's Config.
const (
	KeyPurgeInterval = time.Hour
	KeyPurgeBatch    = 1000
)

// KeyPurger deletes idempotency keys older than its retention, Batch keys
// per statement, counting them (invoiced_idempotency_keys_purged_total)
// and its failures (invoiced_idempotency_key_purge_errors_total).
type KeyPurger struct {
	*service[PurgeResult]
	q         db.Querier
	retention time.Duration
}

// PurgeResult is what one run of a purger (keys, events, sessions) did.
type PurgeResult struct {
	Deleted int64 // rows deleted, also by a run that failed part way
}

// NewKeyPurger returns a KeyPurger of q's keys older than retention. cfg's
// zero fields mean: at once, then every KeyPurgeInterval, KeyPurgeBatch
// keys per statement. It panics on a Config withDefaults refuses.
func NewKeyPurger(q db.Querier, retention time.Duration, cfg Config) *KeyPurger {
	p := &KeyPurger{q: q, retention: retention}
	p.service = &service[PurgeResult]{
		cfg:     cfg.withDefaults(Config{Interval: KeyPurgeInterval, Batch: KeyPurgeBatch}),
		runOnce: p.runOnce,
		report: reporting[PurgeResult]{
			failed:      "purge idempotency keys",
			failedAttrs: func(r PurgeResult) []any { return []any{"deleted", r.Deleted} },
			countFailed: (*metrics.Metrics).KeyPurgeFailed,
			succeeded: func(r PurgeResult) {
				if r.Deleted > 0 {
					p.cfg.Logger.Info("purged idempotency keys", "deleted", r.Deleted, "older_than", p.retention.String())
				}
			},
		},
	}
	return p
}

// runOnce deletes every key older than the retention and counts them. It
// returns how many it deleted, and fails as invoice.PurgeKeys does.
func (p *KeyPurger) runOnce(ctx context.Context) (PurgeResult, error) {
	return purgeOlder(ctx, p.cfg, p.q, p.retention, invoice.PurgeKeys, (*metrics.Metrics).KeysPurged)
}

// purgeOlder is the run of a purger of rows older than retention by
// cfg's clock, cfg.Batch per statement: it deletes them with purge and
// counts them with counted. It returns how many it deleted, and fails as
// purge does.
func purgeOlder(ctx context.Context, cfg Config, q db.Querier, retention time.Duration,
	purge func(context.Context, db.Querier, time.Time, int) (int64, error), counted func(*metrics.Metrics, int64)) (PurgeResult, error) {
	n, err := purge(ctx, q, cfg.Now().Add(-retention), cfg.Batch)
	counted(cfg.Metrics, n)
	return PurgeResult{Deleted: n}, err
}
