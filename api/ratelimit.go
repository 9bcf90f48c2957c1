package api

import (
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
)

// Requests without a valid key cost the server database lookups: an
// unknown key prefix, a receipt id. Each client address has a budget of
// failures (token bucket); one that has spent it gets 429 rate_limited
// for every request that would need such a lookup or that fails to
// authenticate, until the budget refills. A valid key found in the cache
// is never limited, so a till that works goes on working behind the
// address of a client that does not, except when its cache entry must be
// refreshed (every --key-cache-ttl) while that client keeps failing.

// DefaultFailureRate is the failures per second a client address may
// spend when Config.FailureRate is 0.
const DefaultFailureRate = 5.0

// maxPeers bounds the addresses the limiter remembers.
const maxPeers = 10000

var (
	errRateLimited    = apperr.New(apperr.TooMany, "rate_limited", "too many failed requests from this address; retry in a few seconds")
	errKeyRateLimited = apperr.New(apperr.TooMany, "rate_limited", "this API key made more requests a second than the server allows (serve --rate-limit)")
	errOverRateLimit  = apperr.New(apperr.TooMany, "over_rate_limit", "this request carries more invoices than the key's rate limit allows at once (serve --rate-limit)")
)

// failureLimiter is a token bucket per client address.
type failureLimiter struct {
	rate  float64 // tokens per second; 0 means no limit
	burst float64
	mu    sync.Mutex
	peers map[string]bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newFailureLimiter(rate float64, burst int) *failureLimiter {
	switch {
	case rate < 0:
		return &failureLimiter{}
	case rate == 0:
		rate = DefaultFailureRate
	}
	b := float64(burst)
	if burst <= 0 {
		b = 10 * rate
	}
	return &failureLimiter{rate: rate, burst: max(b, 1), peers: map[string]bucket{}}
}

// level returns peer's bucket refilled up to now. The caller holds mu.
func (l *failureLimiter) level(peer string, now time.Time) bucket {
	b, ok := l.peers[peer]
	if !ok {
		return bucket{tokens: l.burst, at: now}
	}
	if dt := now.Sub(b.at).Seconds(); dt > 0 {
		b.tokens, b.at = min(l.burst, b.tokens+dt*l.rate), now
	}
	return b
}

// allow reports whether peer may cause another failure now.
func (l *failureLimiter) allow(peer string, now time.Time) bool {
	if l.rate == 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.level(peer, now).tokens >= 1
}

// charge spends one of peer's tokens on a failure (never below zero).
func (l *failureLimiter) charge(peer string, now time.Time) {
	if l.rate == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.level(peer, now)
	b.tokens = max(0, b.tokens-1)
	if _, ok := l.peers[peer]; !ok && len(l.peers) >= maxPeers {
		l.forgetFull(now)
	}
	l.peers[peer] = b
}

// take spends one of peer's tokens and reports true, or, when none is
// left, reports false and how long until one is.
func (l *failureLimiter) take(peer string, now time.Time) (bool, time.Duration) {
	return l.takeN(peer, now, 1)
}

// takeN spends n of peer's tokens and reports true, or, when fewer are
// left, spends none and reports false and how long until n are (n must
// be at most the burst).
func (l *failureLimiter) takeN(peer string, now time.Time, n float64) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.level(peer, now)
	if b.tokens < n {
		return false, time.Duration((n - b.tokens) / l.rate * float64(time.Second))
	}
	b.tokens -= n
	if _, ok := l.peers[peer]; !ok && len(l.peers) >= maxPeers {
		l.forgetFull(now)
	}
	l.peers[peer] = b
	return true, 0
}

// forgetFull drops the addresses whose buckets have refilled, and all of
// them if that does not make room. The caller holds mu.
func (l *failureLimiter) forgetFull(now time.Time) {
	for p := range l.peers {
		if l.level(p, now).tokens >= l.burst {
			delete(l.peers, p)
		}
	}
	if len(l.peers) >= maxPeers {
		clear(l.peers)
	}
}

// peerAddr returns the client address of r: the host of its remote
// address (behind a proxy, the proxy's).
func peerAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// FailureAllowed returns nil when r's client address may cause another
// failed lookup (a session cookie that names no session, say), and a
// rate_limited error (429) once it has spent its failures: the caller
// then looks nothing up. ChargeFailure spends one.
func (s *Server) FailureAllowed(r *http.Request) error {
	if !s.failures.allow(peerAddr(r), s.now()) {
		return errRateLimited
	}
	return nil
}

// ChargeFailure spends one of r's client address's failures, for a lookup
// that found nothing.
func (s *Server) ChargeFailure(r *http.Request) { s.failures.charge(peerAddr(r), s.now()) }
