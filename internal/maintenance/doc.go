// Package maintenance holds serve's background work, each kind a service
// of one shape: a Config whose zero fields take the service's defaults
// (interval, first delay, batch), a runOnce that does the work once and
// returns a result, and one loop shared by all (Loop) that runs it after
// the first delay and then an interval after each run ends, stops when
// its context ends, and logs a failed run (and counts it, where the
// service has a metric for that). A test waits for a
// run through the service's test signal instead of sleeping.
//
// The services: KeyPurger (idempotency keys past their retention),
// SessionPurger (expired console sessions), ChainChecker (every seller's
// hash chains, into the invoiced_chain_* metrics) and EventPurger (webhook
// events past outbox.EventRetention).
package maintenance
