package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/webhook"
)

func TestVerifySignature(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"CH1-2026-7.issued"}`)
	h := webhook.Sign("whsec_a", body, now)
	if err := webhook.VerifySignature("whsec_a", h, body, 5*time.Minute, now.Add(time.Minute)); err != nil {
		t.Fatalf("valid signature: %v", err)
	}
	for name, c := range map[string]struct {
		secret, header string
		body           []byte
		at             time.Time
		want           error
	}{
		"other secret":    {"whsec_b", h, body, now, webhook.ErrMismatch},
		"other body":      {"whsec_a", h, append([]byte(nil), `{"id":"CH1-2026-8.issued"}`...), now, webhook.ErrMismatch},
		"too old":         {"whsec_a", h, body, now.Add(6 * time.Minute), webhook.ErrTooOld},
		"from the future": {"whsec_a", h, body, now.Add(-6 * time.Minute), webhook.ErrTooOld},
		"no v1":           {"whsec_a", strings.Split(h, ",")[0], body, now, webhook.ErrMalformed},
		"no t":            {"whsec_a", strings.Split(h, ",")[1], body, now, webhook.ErrMalformed},
		"bad hex":         {"whsec_a", "t=1,v1=zz", body, now, webhook.ErrMalformed},
		"empty":           {"whsec_a", "", body, now, webhook.ErrMalformed},
		"other timestamp": {"whsec_a", strings.Replace(h, "t=1800000000", "t=1800000001", 1), body, now, webhook.ErrMismatch},
	} {
		if err := webhook.VerifySignature(c.secret, c.header, c.body, 5*time.Minute, c.at); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	// Rotation: one of several v1 values matching is enough.
	other := webhook.Sign("whsec_old", body, now)
	rotated := other + "," + strings.Split(h, ",")[1]
	if err := webhook.VerifySignature("whsec_a", rotated, body, 0, time.Time{}); err != nil {
		t.Fatalf("rotated header: %v", err)
	}
}

// FuzzVerifySignature checks VerifySignature against an oracle of its
// own: it accepts a header only if some v1 value is the HMAC-SHA256 of
// "t.body" under the secret, for the header's t, within tolerance; it
// fails only with one of its three errors; and the header Sign makes for
// the fuzzed body verifies, and stops verifying for any other body,
// secret or a time out of tolerance.
func FuzzVerifySignature(f *testing.F) {
	f.Add("t=1,v1=00", []byte("{}"))
	f.Add(webhook.Sign("s", []byte("{}"), time.Unix(1, 0)), []byte("{}"))
	f.Add(webhook.Sign("s", []byte("{}"), time.Unix(1, 0))+",v1="+strings.Repeat("ab", 32), []byte("{}"))
	f.Add("t=61,"+strings.Split(webhook.Sign("s", []byte("x"), time.Unix(61, 0)), ",")[1], []byte("x"))
	now := time.Unix(1, 0)
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		err := webhook.VerifySignature("s", header, body, time.Minute, now)
		if err != nil && !errors.Is(err, webhook.ErrMalformed) && !errors.Is(err, webhook.ErrTooOld) && !errors.Is(err, webhook.ErrMismatch) {
			t.Fatalf("VerifySignature(%q): %v, not one of its errors", header, err)
		}
		if err == nil && !oracleAccepts("s", header, body, time.Minute, now) {
			t.Fatalf("VerifySignature accepted %q for body %q, which no v1 value signs in tolerance", header, body)
		}
		h := webhook.Sign("s", body, now)
		if err := webhook.VerifySignature("s", h, body, time.Minute, now); err != nil {
			t.Fatalf("Sign's own header %q for body %q: %v", h, body, err)
		}
		if err := webhook.VerifySignature("s", h, append(slices.Clone(body), 'x'), time.Minute, now); !errors.Is(err, webhook.ErrMismatch) {
			t.Fatalf("Sign's header for %q verified another body: %v", body, err)
		}
		if err := webhook.VerifySignature("s2", h, body, time.Minute, now); !errors.Is(err, webhook.ErrMismatch) {
			t.Fatalf("Sign's header for secret s verified under s2: %v", err)
		}
		if err := webhook.VerifySignature("s", h, body, time.Minute, now.Add(time.Minute+time.Second)); !errors.Is(err, webhook.ErrTooOld) {
			t.Fatalf("a header 61s old passed a 1-minute tolerance: %v", err)
		}
	})
}

// oracleAccepts reports whether header carries, in a "v1=" part, the
// hex HMAC-SHA256 under secret of its last "t=" value, ".", and body,
// with that t a Unix time within tolerance of now: written from the
// documented format, not from VerifySignature.
func oracleAccepts(secret, header string, body []byte, tolerance time.Duration, now time.Time) bool {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	want := m.Sum(nil)
	for _, s := range sigs {
		if got, err := hex.DecodeString(s); err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

func ExampleVerifySignature() {
	body := []byte(`{"id":"CH1-2026-7.issued","type":"invoice.issued"}`)
	at := time.Unix(1_800_000_000, 0)
	header := webhook.Sign("whsec_example", body, at) // what the server sends
	err := webhook.VerifySignature("whsec_example", header, body, 5*time.Minute, at.Add(time.Second))
	fmt.Println(err)
	// Output: <nil>
}
