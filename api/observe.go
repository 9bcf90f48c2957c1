package api

import (
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"
)

// Keys of what a handler leaves in the echo context for the request log.
const ctxSeller = "invoiced.seller"

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
		took := time.Since(began)
		route := c.Path()
		if route == "" {
			route = unmatchedRoute
		}
		r := c.Request()
		status := c.Response().Status
		s.metrics.Request(route, r.Method, status, took)
		if !s.logRequests {
			return nil
		}
		var attrs []slog.Attr
		ids := requestIDs(c)
		for i := 0; i+1 < len(ids); i += 2 {
			attrs = append(attrs, slog.Any(ids[i].(string), ids[i+1]))
		}
		attrs = append(attrs,
			slog.String("method", r.Method),
			slog.String("route", route),
			slog.Int("status", status),
			slog.Float64("duration_ms", float64(took.Microseconds())/1000),
		)
		if g, ok := c.Get(ctxSeller).(string); ok {
			attrs = append(attrs, slog.String("seller", g))
		}
		if code := c.Param("code"); code != "" && route != unmatchedRoute {
			attrs = append(attrs, slog.String("series", code))
		}
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		return nil
	}
}
