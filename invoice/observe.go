package invoice

import (
	"errors"
	"time"
)

// Observer is told what a Committer's transactions did, for metrics. Its
// methods are called from the Committer's goroutines, on the path of the
// next batch: they must be safe for concurrent use and return at once.
type Observer interface {
	// BatchCommitted: a transaction committed and issued invoices (at least
	// one; replays not counted), took from its start to COMMIT's answer.
	BatchCommitted(invoices int, took time.Duration)
	// Mispredicted: a transaction predicted from remembered counter states
	// was refused by the database and is issued the ordinary way.
	Mispredicted()
	// OutcomeUnknown: the connection failed after COMMIT was sent, so the
	// members were answered commit_outcome_unknown.
	OutcomeUnknown()
}

// observeTx tells the Observer about one transaction begun at began whose
// members are calls and which returned *errp (read when it returns: defer
// it).
func (c *Committer) observeTx(began time.Time, calls []*call, errp *error) {
	err := *errp
	if c.cfg.Observer == nil {
		return
	}
	issued := 0
	for _, cl := range calls {
		if cl.answered && cl.res.Err == nil && !cl.res.Replayed {
			issued++
		}
	}
	if issued > 0 {
		c.cfg.Observer.BatchCommitted(issued, time.Since(began))
	}
	if errors.Is(err, ErrOutcomeUnknown) {
		c.cfg.Observer.OutcomeUnknown()
	}
}

// observeMispredicted tells the Observer about a failed prediction.
func (c *Committer) observeMispredicted() {
	if c.cfg.Observer != nil {
		c.cfg.Observer.Mispredicted()
	}
}
