// Package webhook signs and verifies the webhook requests of invoiced.
//
// Each delivery carries the header
//
//	Invoiced-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>
//
// A receiver verifies it with VerifySignature over the raw body, before
// decoding it, and deduplicates events by their id (delivery is at least
// once).
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader is the header that carries the signature.
const SignatureHeader = "Invoiced-Signature"

// Errors of VerifySignature; match them with errors.Is.
var (
	// ErrMalformed: the header is not "t=<unix>,v1=<hex>[,v1=<hex>...]".
	ErrMalformed = errors.New("webhook: malformed signature header")
	// ErrTooOld: the timestamp lies further from now than the tolerance
	// (a replayed request, or a badly wrong clock).
	ErrTooOld = errors.New("webhook: signature timestamp outside the tolerance")
	// ErrMismatch: no v1 signature matches the body with this secret.
	ErrMismatch = errors.New("webhook: signature does not match")
)

// Sign returns the header value signing body with secret at t.
func Sign(secret string, body []byte, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

// VerifySignature checks header (the Invoiced-Signature value) against the
// raw body and secret. It returns nil when a v1 signature matches and the
// timestamp lies within tolerance of now (tolerance 0 skips the time
// check); ErrMalformed, ErrTooOld or ErrMismatch otherwise. Several v1
// values are accepted (one of them must match), for secret rotation.
func VerifySignature(secret, header string, body []byte, tolerance time.Duration, now time.Time) error {
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrMalformed
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				return ErrMalformed
			}
			sigs = append(sigs, b)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrMalformed
	}
	if tolerance > 0 {
		if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
			return ErrTooOld
		}
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return ErrMismatch
}

func mac(secret, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}
