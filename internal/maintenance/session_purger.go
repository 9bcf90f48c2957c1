package maintenance

import "context"

// SessionPurgeInterval is the default Interval of a SessionPurger.
const SessionPurgeInterval = KeyPurgeInterval

// Sessions is the store of the console's sessions (a *console.Console).
type Sessions interface {
	// PurgeSessions deletes the expired sessions and returns how many.
	PurgeSessions(ctx context.Context) (int64, error)
}

// SessionPurger deletes expired console sessions.
type SessionPurger struct {
	*service[PurgeResult]
	sessions Sessions
}

// NewSessionPurger returns a SessionPurger of sessions. cfg's zero fields
// mean: at once, then every SessionPurgeInterval; Batch is unused. It
// panics on a Config withDefaults refuses.
func NewSessionPurger(sessions Sessions, cfg Config) *SessionPurger {
	p := &SessionPurger{sessions: sessions}
	p.service = &service[PurgeResult]{
		cfg:     cfg.withDefaults(Config{Interval: SessionPurgeInterval}),
		runOnce: p.runOnce,
		report: reporting[PurgeResult]{
			failed: "purge console sessions",
			succeeded: func(r PurgeResult) {
				if r.Deleted > 0 {
					p.cfg.Logger.Info("purged expired console sessions", "deleted", r.Deleted)
				}
			},
		},
	}
	return p
}

// runOnce deletes the expired sessions. It returns how many, and fails as
// Sessions.PurgeSessions does.
func (p *SessionPurger) runOnce(ctx context.Context) (PurgeResult, error) {
	n, err := p.sessions.PurgeSessions(ctx)
	return PurgeResult{Deleted: n}, err
}
