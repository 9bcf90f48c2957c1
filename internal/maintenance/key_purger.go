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
	*service[KeyPurgeResult]
	q         db.Querier
	retention time.Duration
}

// KeyPurgeResult is what one run of a KeyPurger did.
type KeyPurgeResult struct {
	Deleted int64 // keys deleted, also by a run that failed part way
}

// NewKeyPurger returns a KeyPurger of q's keys older than retention. cfg's
// zero fields mean: at once, then every KeyPurgeInterval, KeyPurgeBatch
// keys per statement. It panics on a Config withDefaults refuses.
func NewKeyPurger(q db.Querier, retention time.Duration, cfg Config) *KeyPurger {
	p := &KeyPurger{q: q, retention: retention}
	p.service = &service[KeyPurgeResult]{
		cfg:     cfg.withDefaults(Config{Interval: KeyPurgeInterval, Batch: KeyPurgeBatch}),
		runOnce: p.runOnce,
		report: reporting[KeyPurgeResult]{
			failed:      "purge idempotency keys",
			failedAttrs: func(r KeyPurgeResult) []any { return []any{"deleted", r.Deleted} },
			countFailed: (*metrics.Metrics).KeyPurgeFailed,
			succeeded: func(r KeyPurgeResult) {
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
func (p *KeyPurger) runOnce(ctx context.Context) (KeyPurgeResult, error) {
	n, err := invoice.PurgeKeys(ctx, p.q, p.cfg.Now().Add(-p.retention), p.cfg.Batch)
	p.cfg.Metrics.KeysPurged(n)
	return KeyPurgeResult{Deleted: n}, err
}
