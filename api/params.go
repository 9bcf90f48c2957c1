package api

// This file reads request parameters: the Idempotency-Key, dates, financial
// years, list cursors.

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/textcut"
	"github.com/invoiced/invoiced/invoice"
)

// Errors of request parameters.
var (
	errBadIdempotencyKey = apperr.New(apperr.Malformed, "invalid_idempotency_key", "Idempotency-Key must be 1 to 255 printable ASCII characters")
	errBadCursor         = apperr.New(apperr.Invalid, "invalid_cursor", "cursor is not a cursor this server returned")
	errBadLimit          = apperr.New(apperr.Invalid, "invalid_limit", "limit must be an integer from 1 to 1000")
	errBadNumber         = apperr.New(apperr.Invalid, "invalid_number", "number must be an invoice number")
)

// Paging of invoice lists.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
)

// idempotencyKey returns the request's Idempotency-Key, "" when there is
// none. It fails with errBadIdempotencyKey when the header is repeated,
// empty, longer than 255 bytes or not printable ASCII.
func idempotencyKey(h http.Header) (string, error) {
	v, ok := h["Idempotency-Key"]
	if !ok {
		return "", nil
	}
	if len(v) != 1 {
		return "", apperr.Errorf(errBadIdempotencyKey, "the Idempotency-Key header was sent more than once (%d times); send it once per request", len(v))
	}
	if !printableASCII(v[0], 255) {
		return "", errBadIdempotencyKey
	}
	return v[0], nil
}

// requestHash identifies a request for idempotency: SHA-256 over the
// method, the path (series code upper-cased) and the raw body.
func requestHash(method, path string, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)
}

// dateRangeParams parses the from and to query parameters (YYYY-MM-DD,
// either may be empty). It fails with gst.ErrInvalidDate naming the
// parameter, or when from is after to.
func dateRangeParams(from, to string) (invoice.DateRange, error) {
	var r invoice.DateRange
	for _, p := range []struct {
		name, v string
		dst     *time.Time
	}{{"from", from, &r.From}, {"to", to, &r.To}} {
		if p.v == "" {
			continue
		}
		d, err := time.Parse(time.DateOnly, p.v)
		if err != nil {
			return r, apperr.Errorf(gst.ErrInvalidDate, "%s %q must be a date, YYYY-MM-DD", p.name, clip(p.v))
		}
		*p.dst = d
	}
	if !r.From.IsZero() && !r.To.IsZero() && r.From.After(r.To) {
		return r, apperr.Errorf(gst.ErrInvalidDate, "from %s is after to %s", from, to)
	}
	return r, nil
}

// Cursors are opaque to clients: base64url of "s" and the last serial seen.
func encodeCursor(serial int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("s" + strconv.FormatInt(serial, 10)))
}

func decodeCursor(v string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) < 2 || b[0] != 's' {
		return 0, errBadCursor
	}
	n, err := strconv.ParseInt(string(b[1:]), 10, 64)
	if err != nil || n < 1 || encodeCursor(n) != v {
		return 0, errBadCursor
	}
	return n, nil
}

// clip returns s cut to at most textcut.Echo bytes (on a character
// boundary) with "…" appended when it was longer: for echoing what a
// client sent.
func clip(s string) string { return textcut.To(s, textcut.Echo) }

// fyParam reads a fy query parameter ("2026-27"); empty means the current
// financial year in IST. It fails with gst.ErrInvalidDate.
func (s *Server) fyParam(v string) (gst.FY, error) {
	if v == "" {
		return gst.FYAt(s.now()), nil
	}
	return gst.ParseFY(v)
}
