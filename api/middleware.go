package api

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
)

// headerRequestID names the server's id of a request in the answer, and a
// client's own id of it in the request.
const headerRequestID = "X-Request-Id"

// base runs around every request: it gives the request a fresh random id
// (X-Request-Id; a client's own is only logged beside it), says nosniff,
// opens the request's ledger of the byte budget (budget.go) and gives back
// what it took when the request ends, and turns a panic into a logged
// 500. The request's deadline is its route class's (guards.go).
func (s *Server) base(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		h := c.Response().Header()
		h.Set(headerRequestID, newRequestID())
		h.Set("X-Content-Type-Options", "nosniff")
		ctx, giveBack := withLedger(c.Request().Context(), s.bytes)
		defer giveBack()
		c.SetRequest(c.Request().WithContext(ctx))
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				err = fmt.Errorf("panic: %v", v)
			}
		}()
		return next(c)
	}
}

// newRequestID returns 128 random bits in hex: unlike a counter, it tells
// nobody how many requests the server has seen.
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand documents it)
	return hex.EncodeToString(b[:])
}

// requestIDs returns the log attributes that identify request r, whose
// answer's header is h: the server's id, and the client's X-Request-Id
// when it sent a short, printable one.
func requestIDs(h http.Header, r *http.Request) []any {
	ids := []any{"request_id", h.Get(headerRequestID)}
	if v := r.Header.Get(headerRequestID); printableASCII(v, 64) {
		ids = append(ids, "client_request_id", v)
	}
	return ids
}

// printableASCII reports whether s is 1 to max bytes of printable ASCII
// (0x20–0x7E).
func printableASCII(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
