package api

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
)

// Config configures a Server.
type Config struct {
	// Pool is the database. Required.
	Pool *pgxpool.Pool
	// Logger receives internal errors; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// LockTimeout bounds the wait for a series counter lock; past it the
	// request gets 503 with Retry-After. 0 means 3s.
	LockTimeout time.Duration
	// BackdateDays is how many days before today (IST) an invoice date may
	// lie; 0 allows only today.
	BackdateDays int
	// MaxBodyBytes bounds request bodies (413 beyond); 0 means 1 MiB.
	MaxBodyBytes int64
	// RequestTimeout bounds the database work of one request (503 past it);
	// 0 means 30s.
	RequestTimeout time.Duration
	// DisableBatching issues every invoice in a transaction of its own
	// instead of gathering concurrent requests for a series into one
	// (group commit, see invoice.Committer). For comparison only.
	DisableBatching bool
	// BatchesInFlight is how many group-commit transactions may be open at
	// once (invoice.Committer.InFlight); 0 means 1.
	BatchesInFlight int
	// DisablePrediction makes every group-commit transaction read its
	// counter rows before numbering (three round trips) instead of
	// predicting them from the state this process left them in (one); see
	// invoice.Committer.Predict. For comparison only.
	DisablePrediction bool
	// KeyCacheTTL is how long a looked-up API key is trusted before the
	// database is asked again, so a revoked key keeps working for at most
	// this long; 0 means 5s, negative asks the database on every request.
	KeyCacheTTL time.Duration
	// ExposeStats serves GET /debug/stats (group-commit counters, no
	// tenant data); otherwise that route answers 404.
	ExposeStats bool
}

// Defaults of Config.
const (
	DefaultLockTimeout    = 3 * time.Second
	DefaultMaxBodyBytes   = 1 << 20
	DefaultRequestTimeout = 30 * time.Second
	DefaultKeyCacheTTL    = 5 * time.Second
)

// lookupKey finds an API key by prefix, through the key cache unless it is
// disabled.
func (s *Server) lookupKey(ctx context.Context, prefix string) (keyRow, bool, error) {
	if s.keyTTL < 0 {
		return lookupKey(ctx, s.pool, prefix)
	}
	return s.keys.lookup(ctx, s.pool, prefix, s.now(), s.keyTTL)
}

// Server serves the invoiced HTTP API. Make one with New.
type Server struct {
	pool    *pgxpool.Pool
	log     *slog.Logger
	now     func() time.Time
	opt     series.Options
	policy  invoice.Policy
	maxBody int64
	timeout time.Duration
	e       *echo.Echo

	committer   *invoice.Committer
	exposeStats bool
	keyTTL      time.Duration
	keys        keyCache
	series      seriesCache

	reqPrefix string
	reqSeq    atomic.Uint64
}

//go:embed openapi.yaml
var openAPISpec []byte

// New returns a Server for cfg, with its defaults filled in. It does not
// touch the database.
func New(cfg Config) *Server {
	s := &Server{
		pool:    cfg.Pool,
		log:     cfg.Logger,
		now:     cfg.Now,
		opt:     series.Options{LockTimeout: cfg.LockTimeout},
		policy:  invoice.Policy{BackdateDays: cfg.BackdateDays},
		maxBody: cfg.MaxBodyBytes,
		timeout: cfg.RequestTimeout,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.opt.LockTimeout <= 0 {
		s.opt.LockTimeout = DefaultLockTimeout
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.timeout <= 0 {
		s.timeout = DefaultRequestTimeout
	}
	s.committer = &invoice.Committer{
		DB: s.pool, Options: s.opt, Batching: !cfg.DisableBatching, Logger: s.log, Now: s.now,
		InFlight: cfg.BatchesInFlight, Predict: !cfg.DisablePrediction,
	}
	s.exposeStats = cfg.ExposeStats
	s.keyTTL = cfg.KeyCacheTTL
	if s.keyTTL == 0 {
		s.keyTTL = DefaultKeyCacheTTL
	}
	var p [4]byte
	rand.Read(p[:])
	s.reqPrefix = hex.EncodeToString(p[:]) + "-"

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(s.base)
	s.routes(e)
	s.e = e
	return s
}

// routes registers every route. Keep api/openapi.yaml in step: a test
// checks that both list the same (method, path) pairs.
func (s *Server) routes(e *echo.Echo) {
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/openapi.yaml", s.openAPI)
	e.GET("/debug/stats", s.stats)

	e.POST("/v1/series", s.createSeries)
	e.GET("/v1/series", s.listSeries)
	e.POST("/v1/series/:code/invoices", s.issueInvoice)
	e.GET("/v1/series/:code/invoices", s.listInvoices)
	e.GET("/v1/invoices/:id", s.getInvoice)
	e.POST("/v1/invoices/:id/cancel", s.cancelInvoice)

	e.GET("/r/:public_id", s.receipt)

	e.GET("/v1/series/:code/audit", s.audit)
	e.POST("/v1/periods/:fp/lock", s.lockPeriod)
	e.GET("/v1/periods", s.listPeriods)
	e.GET("/v1/reports/gstr1/doc-issue", s.docIssue)
}

// Handler returns the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.e }

const headerRequestID = "X-Request-Id"

// base runs around every request: it sets the request id (the client's
// X-Request-Id when it is short and printable, otherwise a fresh one),
// bounds the request's database work with the request timeout, and turns
// a panic into a logged 500.
func (s *Server) base(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		r := c.Request()
		id := r.Header.Get(headerRequestID)
		if !printableASCII(id, 64) {
			id = s.reqPrefix + strconv.FormatUint(s.reqSeq.Add(1), 10)
		}
		c.Response().Header().Set(headerRequestID, id)
		timeout := s.timeout
		if isExport(c.Path()) {
			timeout = exportTimeout
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		c.SetRequest(r.WithContext(ctx))
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

// authorize authenticates the request's bearer key and checks that it
// carries need. It fails with ErrUnauthorized (401) or ErrForbidden (403).
func (s *Server) authorize(c echo.Context, need scopeSet) (principal, error) {
	p, err := authenticate(c.Request().Context(), s.lookupKey, c.Request().Header.Get("Authorization"))
	if err != nil {
		return principal{}, err
	}
	if !p.scopes.has(need) {
		return principal{}, ErrForbidden
	}
	return p, nil
}

// writeJSON writes v as the JSON body with status. encoding/json writes
// struct fields in declaration order, so equal values give equal bytes.
func writeJSON(c echo.Context, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Blob(status, echo.MIMEApplicationJSON, b)
}

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
		Batching: s.committer.Batching, Batches: st.Batches, Invoices: st.Invoices,
		Retries: st.Retries, MaxBatch: st.MaxBatch, Predicted: st.Predicted, Mispredicted: st.Mispredicted,
	})
}

type statsBody struct {
	Batching bool  `json:"batching"`
	Batches  int64 `json:"batches"`
	Invoices int64 `json:"invoices"`
	Retries  int64 `json:"retries"`
	MaxBatch int   `json:"max_batch"`
	// Predicted and Mispredicted: see invoice.Stats.
	Predicted    int64 `json:"predicted"`
	Mispredicted int64 `json:"mispredicted"`
}

func (s *Server) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", openAPISpec)
}
