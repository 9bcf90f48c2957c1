package api

// This file holds the routes for operators and tools rather than tills:
// health, readiness, group-commit stats, metrics and the OpenAPI document.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/labstack/echo/v4"
)

func (s *Server) healthz(c echo.Context) error {
	return writeJSON(c, http.StatusOK, statusBody{Status: "ok"})
}

// readyz answers 200 when the database answers a ping within two seconds,
// 503 database_unavailable otherwise.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		return apperr.WithCause(errDBUnavailable, err)
	}
	return writeJSON(c, http.StatusOK, statusBody{Status: "ok"})
}

type statusBody struct {
	Status string `json:"status"`
}

// stats serves GET /debug/stats: the group-commit counters of this
// process, when Config.ExposeStats is set (404 otherwise).
func (s *Server) stats(c echo.Context) error {
	if !s.exposeStats {
		return echo.ErrNotFound
	}
	st := s.committer.Stats()
	return writeJSON(c, http.StatusOK, statsBody{
		Batching: true, Batches: st.Batches, Invoices: st.Invoices,
		Retries: st.Retries, MaxBatch: st.MaxBatch, Predicted: st.Predicted, Mispredicted: st.Mispredicted,
	})
}

type statsBody struct {
	// Batching is always true (every Committer batches); kept for
	// clients that read it.
	Batching bool  `json:"batching"`
	Batches  int64 `json:"batches"`
	Invoices int64 `json:"invoices"`
	Retries  int64 `json:"retries"`
	MaxBatch int   `json:"max_batch"`
	// Predicted and Mispredicted: see invoice.Stats.
	Predicted    int64 `json:"predicted"`
	Mispredicted int64 `json:"mispredicted"`
}

// serveMetrics serves GET /metrics in Prometheus' text format: to anyone
// with Config.ExposeMetrics, to a request bearing Config.MetricsToken with
// that, and 404 otherwise. A missing or wrong token is apikey's 401 and
// spends the client address's failure budget (429 rate_limited once it is
// spent, before the token is compared).
func (s *Server) serveMetrics(c echo.Context) error {
	if s.metricsHTTP == nil {
		return echo.ErrNotFound
	}
	if s.metricsToken != nil {
		r := c.Request()
		peer, now := peerAddr(r), s.now()
		if !s.failures.allow(peer, now) {
			return errRateLimited
		}
		got := sha256.Sum256([]byte(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")))
		if subtle.ConstantTimeCompare(got[:], s.metricsToken) != 1 {
			s.failures.charge(peer, now)
			return apperr.Errorf(apikey.ErrUnauthorized, "GET /metrics needs the metrics token (serve --metrics-token) as a bearer token")
		}
	}
	s.metricsHTTP.ServeHTTP(c.Response(), c.Request())
	return nil
}

// openAPI serves the OpenAPI document with its server URL set to
// Config.PublicURL, or to "/" (relative: the document's own address, which
// a client generated from it or "try it out" resolves) without one. The
// request's Host is never written into it: it is whatever the client sent
// (behind a proxy, an internal name), so the document would point clients
// at an address of the client's choosing.
func (s *Server) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", s.spec)
}

// specServerLine is the server URL line of api/openapi.yaml that specFor
// replaces.
const specServerLine = "\n  - url: http://127.0.0.1:8080\n"

// specFor returns the OpenAPI document naming publicURL as its server, or
// "/" when publicURL is "" or not a plain URL (specURL).
func specFor(publicURL string) []byte {
	u := "/"
	if publicURL != "" && specURL(publicURL) {
		u = publicURL
	}
	return bytes.Replace(openAPISpec, []byte(specServerLine), []byte("\n  - url: "+u+"\n"), 1)
}

// specURL reports whether u is an http(s) URL of 1 to 2048 bytes of
// letters, digits and "-._~:/[]%" alone: nothing that could break out of a
// YAML scalar.
func specURL(u string) bool {
	if len(u) > 2048 || !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return false
	}
	for _, r := range u {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~:/[]%", r)
		if !ok {
			return false
		}
	}
	return true
}
