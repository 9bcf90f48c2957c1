package api

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAuthFailureTimingEqual interleaves three kinds of failed
// authentication: a known prefix (cached by a recent success) with a
// wrong secret, a fresh unknown prefix each time (a database lookup), and
// one unknown prefix repeated. Their median answer times must be within
// 40% of each other (they differed by a factor of 2.2 when a cached key
// skipped the database), so that timing does not tell which prefixes
// exist or are in use.
func TestAuthFailureTimingEqual(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.FailureRate = -1 })
	e.wantStatus(e.do("GET", "/v1/series", e.read, ""), http.StatusOK) // caches the key
	wrongSecret := e.read[:len(e.read)-4] + "aaaa"
	if wrongSecret == e.read {
		wrongSecret = e.read[:len(e.read)-4] + "bbbb"
	}
	secret := e.read[len("ik_00000000_"):]
	fresh := func() string {
		var b [4]byte
		rand.Read(b[:])
		return "ik_" + hex.EncodeToString(b[:]) + "_" + secret
	}
	repeated := fresh()
	const rounds = 100
	var known, unknown, again []time.Duration
	measure := func(key string) time.Duration {
		began := time.Now()
		r := e.do("GET", "/v1/series", key, "")
		d := time.Since(began)
		if r.status != http.StatusUnauthorized {
			t.Fatalf("status %d for a wrong key", r.status)
		}
		return d
	}
	for range rounds {
		known = append(known, measure(wrongSecret))
		unknown = append(unknown, measure(fresh()))
		again = append(again, measure(repeated))
	}
	median := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	mk, mu, ma := median(known), median(unknown), median(again)
	t.Logf("median 401: known prefix, wrong secret %s; unknown prefix %s; unknown prefix repeated %s", mk, mu, ma)
	lo, hi := min(mk, mu, ma), max(mk, mu, ma)
	if float64(hi) > 1.4*float64(lo) {
		t.Fatalf("401 medians differ by more than 40%%: known %s, unknown %s, repeated unknown %s", mk, mu, ma)
	}
}

// TestFailuresRateLimitedPerAddress: a client address that keeps failing
// to authenticate, or keeps asking for receipts that do not exist, soon
// gets 429 without a database lookup, while a valid cached key from the
// same address goes on working.
func TestFailuresRateLimitedPerAddress(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.FailureRate, c.FailureBurst = 1, 5 })
	e.wantStatus(e.do("GET", "/v1/series", e.read, ""), http.StatusOK)
	statuses := map[int]int{}
	for i := range 30 {
		key := "ik_" + strings.Repeat("0", 7) + string(rune('a'+i%6)) + "_" + e.read[len("ik_00000000_"):]
		r := e.do("GET", "/v1/series", key, "")
		statuses[r.status]++
		if r.status == http.StatusTooManyRequests {
			e.wantError(r, http.StatusTooManyRequests, "rate_limited")
			if r.header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		}
	}
	if statuses[http.StatusUnauthorized] > 8 || statuses[http.StatusTooManyRequests] < 20 {
		t.Fatalf("30 unknown keys in a row from one address: %v; want about 5 × 401, then 429", statuses)
	}
	e.wantStatus(e.do("GET", "/v1/series", e.read, ""), http.StatusOK) // valid and cached: not limited
	// A wrong secret for that cached key is a failure like any other.
	e.wantError(e.do("GET", "/v1/series", e.read[:len(e.read)-1]+"x", ""), http.StatusTooManyRequests, "rate_limited")
	receipts := map[int]int{}
	for range 10 {
		receipts[e.do("GET", "/r/"+strings.Repeat("a", 26), "", "").status]++
	}
	if receipts[http.StatusTooManyRequests] < 9 {
		t.Fatalf("unknown receipts after the failures: %v; want 429", receipts)
	}
}
