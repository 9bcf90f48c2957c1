package api

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAuthFailureTimingEqual measures three kinds of failed
// authentication in rounds, in a random order within each round: a known
// prefix (cached by a recent success) with a wrong secret, a fresh
// unknown prefix each time (a database lookup), and one unknown prefix
// repeated. The median difference of each kind from the fresh unknown
// prefix, round by round (rounds cancel out load that comes and goes),
// must be within 40% of the unknown prefix's median; a cached key
// skipping the database made it -57%. Timing on a shared machine is
// noisy, so a measurement that fails is repeated, up to three in all: the
// old gap failed every one.
func TestAuthFailureTimingEqual(t *testing.T) {
	// Not parallel: other tests' load would blur the measurement.
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
	measure := func(key string) time.Duration {
		began := time.Now()
		r := e.do("GET", "/v1/series", key, "")
		d := time.Since(began)
		if r.status != http.StatusUnauthorized {
			t.Fatalf("status %d for a wrong key", r.status)
		}
		return d
	}
	median := func(d []time.Duration) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[len(d)/2]
	}
	const rounds = 100
	var last string
	for attempt := 1; attempt <= 3; attempt++ {
		var unknown, dKnown, dAgain []time.Duration
		for range rounds {
			var k, u, a time.Duration
			for _, which := range mrand.Perm(3) {
				switch which {
				case 0:
					k = measure(wrongSecret)
				case 1:
					u = measure(fresh())
				case 2:
					a = measure(repeated)
				}
			}
			unknown = append(unknown, u)
			dKnown, dAgain = append(dKnown, k-u), append(dAgain, a-u)
		}
		base := float64(median(unknown))
		rk, ra := float64(median(dKnown))/base, float64(median(dAgain))/base
		last = fmt.Sprintf("unknown prefix %s; known prefix with a wrong secret %+.0f%%, unknown prefix repeated %+.0f%%",
			median(unknown), 100*rk, 100*ra)
		t.Logf("attempt %d: %s", attempt, last)
		if math.Abs(rk) <= 0.4 && math.Abs(ra) <= 0.4 {
			return
		}
	}
	t.Fatalf("401 timings differ by more than 40%% in three measurements; the last: %s", last)
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
	// The limiter reads the server's clock, which is the tests' fixed
	// testNow, not the wall clock: its bucket never refills here, however
	// slow the machine, so the counts are exact: the burst, then 429.
	if statuses[http.StatusUnauthorized] != 5 || statuses[http.StatusTooManyRequests] != 25 {
		t.Fatalf("30 unknown keys in a row from one address, with a clock that does not move: %v; want exactly 5 × 401 (the burst), then 25 × 429", statuses)
	}
	e.wantStatus(e.do("GET", "/v1/series", e.read, ""), http.StatusOK) // valid and cached: not limited
	// A wrong secret for that cached key is a failure like any other.
	e.wantError(e.do("GET", "/v1/series", wrongSecret(e.read), ""), http.StatusTooManyRequests, "rate_limited")
	receipts := map[int]int{}
	for range 10 {
		receipts[e.do("GET", "/r/"+strings.Repeat("a", 26), "", "").status]++
	}
	if receipts[http.StatusTooManyRequests] < 9 {
		t.Fatalf("unknown receipts after the failures: %v; want 429", receipts)
	}
	if receipts[http.StatusTooManyRequests] != 10 {
		t.Fatalf("unknown receipts after the failures, with a clock that does not move: %v; want 10 × 429", receipts)
	}
}
