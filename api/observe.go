package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// unmatchedRoute is the route label of requests no route matched, so that
// scanners probing random paths cannot grow the metrics.
const unmatchedRoute = "unmatched"

// observe runs around every request, outside base: it records the request
// in the metrics (route template, method, status, duration) and writes one
// log line for it with the request id, route, status, duration and, when
// known, the seller's GSTIN and the series code of the path. It never logs
// the body, the query or anything of the buyer.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		began := time.Now()
		if err := next(c); err != nil {
			c.Error(err) // writes the error answer, so its status is known
		}
		route := c.Path()
		if route == "" {
			route = unmatchedRoute
		}
		var seller string
		if p, ok := principalOf(c.Request()); ok {
			seller = string(p.Seller.GSTIN)
		}
		var code string
		if route != unmatchedRoute {
			code = c.Param("code")
		}
		s.record(c.Request(), c.Response().Header(), route, c.Response().Status, time.Since(began), seller, code)
		return nil
	}
}

// record puts one request in the metrics and, with Config.LogRequests,
// writes its line (observe says what it holds); h is its answer's header.
func (s *Server) record(r *http.Request, h http.Header, route string, status int, took time.Duration, seller, code string) {
	s.metrics.Request(route, r.Method, status, took)
	if !s.logRequests {
		return
	}
	var attrs []slog.Attr
	ids := requestIDs(h, r)
	for i := 0; i+1 < len(ids); i += 2 {
		attrs = append(attrs, slog.Any(ids[i].(string), ids[i+1]))
	}
	attrs = append(attrs,
		slog.String("method", r.Method),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(took.Microseconds())/1000),
	)
	if seller != "" {
		attrs = append(attrs, slog.String("seller", seller))
	}
	if code != "" {
		attrs = append(attrs, slog.String("series", code))
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

// Observe returns next, a handler served beside the API (the console),
// observed as the API's own requests are: a fresh X-Request-Id and
// nosniff on its answer, and the request in the metrics and the request
// log, its route the pattern next's ServeMux matched without the method
// ("/console/series/{code}/{fy}"; unmatched when none did, so made-up
// paths add no series), with the seller next names with NoteSeller and
// the {code} of the path. A panic (an export cut off) is recorded as a
// 500 and goes on.
func (s *Server) Observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		h := w.Header()
		h.Set(headerRequestID, newRequestID())
		h.Set("X-Content-Type-Options", "nosniff")
		note := &requestNote{}
		r = r.WithContext(context.WithValue(r.Context(), requestNoteKey{}, note))
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			status := sw.status
			switch {
			case status == 0 && v != nil:
				status = http.StatusInternalServerError
			case status == 0:
				status = http.StatusOK // nothing written: net/http answers 200
			}
			route, code := unmatchedRoute, ""
			if _, path, ok := strings.Cut(r.Pattern, " "); ok {
				route, code = path, r.PathValue("code")
			} else if r.Pattern != "" {
				route, code = r.Pattern, r.PathValue("code")
			}
			note.mu.Lock()
			seller := note.seller
			note.mu.Unlock()
			s.record(r, h, route, status, time.Since(began), seller, code)
			if v != nil {
				panic(v)
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// requestNote is what a handler wrapped by Observe tells the log of its
// request.
type requestNote struct {
	mu     sync.Mutex
	seller string
}

type requestNoteKey struct{}

// NoteSeller names the seller (its GSTIN) of the request whose context is
// ctx, for its line in the request log; outside Observe it does nothing.
func NoteSeller(ctx context.Context, gstin string) {
	if n, ok := ctx.Value(requestNoteKey{}).(*requestNote); ok {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.seller = gstin
	}
}

// statusWriter remembers the status of the answer written through it.
// Unwrap lets http.ResponseController reach the connection (deadlines,
// flushes) as it would without it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
