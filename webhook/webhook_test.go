package webhook_test

import (
	"errors"
	"fmt"
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

func FuzzVerifySignature(f *testing.F) {
	f.Add("t=1,v1=00", []byte("{}"))
	f.Add(webhook.Sign("s", []byte("{}"), time.Unix(1, 0)), []byte("{}"))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		_ = webhook.VerifySignature("s", header, body, time.Minute, time.Unix(1, 0))
	})
}

func ExampleVerifySignature() {
	body := []byte(`{"id":"CH1-2026-7.issued","type":"invoice.issued"}`)
	at := time.Unix(1_800_000_000, 0)
	header := webhook.Sign("whsec_example", body, at) // what the server sends
	err := webhook.VerifySignature("whsec_example", header, body, 5*time.Minute, at.Add(time.Second))
	fmt.Println(err)
	// Output: <nil>
}
