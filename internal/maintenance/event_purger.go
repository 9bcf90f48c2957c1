package maintenance

import (
	"context"
	"time"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/webhook/outbox"
)

// Defaults of NewEventPurger's Config.
const (
	EventPurgeInterval = time.Hour
	EventPurgeBatch    = 1000
)

// EventPurger deletes webhook events (and their deliveries) older than
// outbox.EventRetention, Batch per statement, counting them
// (invoiced_events_purged_total).
type EventPurger struct {
	*service[PurgeResult]
	q db.Querier
}

// NewEventPurger returns an EventPurger of q's events. cfg's zero fields
// mean: at once, then every EventPurgeInterval, EventPurgeBatch events
// per statement. Events are dated by the clock that records them: a test
// whose events carry a fixed date gives Config.Now that clock. It panics
// on a Config withDefaults refuses.
func NewEventPurger(q db.Querier, cfg Config) *EventPurger {
	p := &EventPurger{q: q}
	p.service = &service[PurgeResult]{
		cfg:     cfg.withDefaults(Config{Interval: EventPurgeInterval, Batch: EventPurgeBatch}),
		runOnce: p.runOnce,
		report:  reporting[PurgeResult]{failed: "webhooks: purging old events failed"},
	}
	return p
}

// runOnce deletes the events past their retention and counts them. It
// returns how many it deleted, and fails as outbox.PurgeEvents does.
func (p *EventPurger) runOnce(ctx context.Context) (PurgeResult, error) {
	return purgeOlder(ctx, p.cfg, p.q, outbox.EventRetention, outbox.PurgeEvents, (*metrics.Metrics).EventsPurged)
}
