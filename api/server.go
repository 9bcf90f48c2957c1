package api

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/metrics"
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
	// Now is the clock; nil means time.Now, with the invoice-date window
	// judged by the database's clock (invoice.DatabaseClock: one "today"
	// for every replica). A clock given here judges the window too (tests
	// move it across IST midnight).
	Now func() time.Time
	// LockTimeout bounds the wait for a series counter lock; past it the
	// request gets 503 with Retry-After. 0 means 3s.
	LockTimeout time.Duration
	// BackdateDays is how many days before today (IST) an invoice date may
	// lie; 0 allows only today.
	BackdateDays int
	// MaxBodyBytes, when positive, lowers the body limit of every route
	// (413 beyond); 0 keeps each route's own limit (an issue request
	// 516 KiB, a series or a cancel 8 KiB).
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
	// Metrics receives the server's metrics; nil gives the server a set of
	// its own. Its Handler is served at GET /metrics when ExposeMetrics
	// is set (otherwise that route answers 404 and the caller serves it
	// elsewhere).
	Metrics       *metrics.Metrics
	ExposeMetrics bool
	// LogRequests writes one Info line per request to Logger (request
	// id, route, status, duration, seller GSTIN, series code; never a
	// body, a query or buyer data).
	LogRequests bool

	// MaxExports bounds the audit exports in progress at once over all
	// sellers, MaxExportsPerSeller those of one seller; past either the
	// request gets 429 too_many_exports. 0 means the default.
	MaxExports          int
	MaxExportsPerSeller int
	// ExportStallTimeout is how long a client may stop reading an export
	// before its connection is cut; 0 means 30s.
	ExportStallTimeout time.Duration
	// SpoolDir is where exports are written before they are sent; ""
	// means os.TempDir().
	SpoolDir string

	// FailureRate is how many authentication failures and unknown receipt
	// ids one client address may cause per second (FailureBurst at once)
	// before its requests that fail or need a database lookup without a
	// valid cached key get 429 rate_limited; 0 means 5 per second,
	// negative no limit. FailureBurst 0 means ten seconds' worth.
	FailureRate  float64
	FailureBurst int

	// KeyRate, when positive, is how many requests per second one API key
	// may make (a second's worth at once); past it the request gets 429
	// rate_limited with Retry-After. 0 means no limit.
	KeyRate float64
	// WebhookAllowPrivate lets webhooks be registered for URLs that
	// resolve to loopback, private or link-local addresses (tests,
	// on-premises receivers); otherwise they are refused (SSRF). The
	// Deliverer has its own switch for the addresses it connects to.
	WebhookAllowPrivate bool
}

// Defaults of Config.
const (
	DefaultLockTimeout    = 3 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultKeyCacheTTL    = 5 * time.Second
)

// bodyLimit returns the body limit of a route whose own limit is
// routeMax: routeMax, or Config.MaxBodyBytes when that is lower.
func (s *Server) bodyLimit(routeMax int64) int64 {
	if s.maxBody > 0 {
		return min(s.maxBody, routeMax)
	}
	return routeMax
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

	exports     *exportSlots
	exportStall time.Duration
	spoolDir    string

	committer   *invoice.Committer
	exposeStats bool
	metrics     *metrics.Metrics
	metricsHTTP http.Handler // nil: GET /metrics answers 404
	logRequests bool
	keyTTL      time.Duration
	keys        keyCache
	failures    *failureLimiter
	keyRate     *failureLimiter // nil: no per-key limit
	series      seriesCache

	webhookAllowPrivate bool
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
	dateClock := invoice.ProcessClock
	if s.now == nil {
		s.now, dateClock = time.Now, invoice.DatabaseClock
	}
	if s.opt.LockTimeout <= 0 {
		s.opt.LockTimeout = DefaultLockTimeout
	}
	if s.timeout <= 0 {
		s.timeout = DefaultRequestTimeout
	}
	s.metrics = cfg.Metrics
	if s.metrics == nil {
		s.metrics = metrics.New()
	}
	if cfg.ExposeMetrics {
		s.metricsHTTP = s.metrics.Handler()
	}
	s.logRequests = cfg.LogRequests
	s.opt.LockWaited = s.metrics.LockWaited
	s.committer = &invoice.Committer{
		DB: s.pool, Options: s.opt, Batching: !cfg.DisableBatching, Logger: s.log, Now: s.now, DateWindow: &s.policy, DateClock: dateClock,
		InFlight: cfg.BatchesInFlight, Predict: !cfg.DisablePrediction, Observer: s.metrics,
	}
	s.exposeStats = cfg.ExposeStats
	s.webhookAllowPrivate = cfg.WebhookAllowPrivate
	s.failures = newFailureLimiter(cfg.FailureRate, cfg.FailureBurst)
	if cfg.KeyRate > 0 {
		s.keyRate = &failureLimiter{rate: cfg.KeyRate, burst: max(1, cfg.KeyRate), peers: map[string]bucket{}}
	}
	s.exports = newExportSlots(cfg.MaxExports, cfg.MaxExportsPerSeller)
	s.exportStall, s.spoolDir = cfg.ExportStallTimeout, cfg.SpoolDir
	if s.exportStall <= 0 {
		s.exportStall = DefaultExportStallTimeout
	}
	s.keyTTL = cfg.KeyCacheTTL
	if s.keyTTL == 0 {
		s.keyTTL = DefaultKeyCacheTTL
	}

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(s.observe, s.base)
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
	e.GET("/metrics", s.serveMetrics)

	e.POST("/v1/series", s.createSeries)
	e.GET("/v1/series", s.listSeries)
	e.POST("/v1/series/:code/invoices", s.issueInvoice)
	e.POST("/v1/series/:code/invoices/batch", s.issueBatch)
	e.GET("/v1/series/:code/invoices", s.listInvoices)
	e.GET("/v1/invoices", s.findInvoices)
	e.GET("/v1/invoices/:id", s.getInvoice)
	e.POST("/v1/invoices/:id/cancel", s.cancelInvoice)

	e.GET("/r/:public_id", s.receipt)

	e.POST("/v1/webhooks", s.createWebhook)
	e.GET("/v1/webhooks", s.listWebhooks)
	e.DELETE("/v1/webhooks/:id", s.deleteWebhook)
	e.GET("/v1/events", s.listEvents)
	e.GET("/v1/series/:code/audit", s.audit)
	e.POST("/v1/periods/:fp/lock", s.lockPeriod)
	e.GET("/v1/periods", s.listPeriods)
	e.GET("/v1/reports/gstr1/doc-issue", s.docIssue)
	s.leaseRoutes(e)
}

// Handler returns the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.e }

const headerRequestID = "X-Request-Id"

// base runs around every request: it gives the request a fresh random id
// (X-Request-Id; a client's own is only logged beside it), says nosniff,
// bounds the request's database work with the request timeout, and turns
// a panic into a logged 500.
func (s *Server) base(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		r := c.Request()
		h := c.Response().Header()
		h.Set(headerRequestID, newRequestID())
		h.Set("X-Content-Type-Options", "nosniff")
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

// newRequestID returns 128 random bits in hex: unlike a counter, it tells
// nobody how many requests the server has seen.
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand documents it)
	return hex.EncodeToString(b[:])
}

// requestIDs returns the log attributes that identify c's request: the
// server's id, and the client's X-Request-Id when it sent a short,
// printable one.
func requestIDs(c echo.Context) []any {
	ids := []any{"request_id", c.Response().Header().Get(headerRequestID)}
	if v := c.Request().Header.Get(headerRequestID); printableASCII(v, 64) {
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

// authorize authenticates the request's bearer key and checks that it
// carries need. It fails with ErrUnauthorized (401); with errRateLimited
// (429) when the client address has spent its failures and the request is
// not one with a valid key found in the cache; or with ErrForbidden (403).
//
// Every failure with a well-formed key costs the same work, one database
// lookup of the prefix: a key answered from the cache whose secret does
// not match is looked up again (which also refreshes the entry). Otherwise
// a cached key answered a wrong secret in half the time of an unknown
// prefix, and timing told which prefixes are in use. An address out of
// failures gets 429 before any lookup, whichever the kind of failure, so
// that too takes the same time.
func (s *Server) authorize(c echo.Context, need scopeSet) (principal, error) {
	p, err := s.authenticate(c.Request(), c.Request().Header.Get("Authorization"))
	if err != nil {
		return principal{}, err
	}
	c.Set(ctxSeller, string(p.seller.GSTIN))
	if s.keyRate != nil {
		if ok, wait := s.keyRate.take(p.prefix, s.now()); !ok {
			secs := max(1, int(math.Ceil(wait.Seconds())))
			c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
			return principal{}, apperr.Errorf(errKeyRateLimited, "this API key may make %s requests a second (serve --rate-limit); retry in %d s", strconv.FormatFloat(s.keyRate.rate, 'f', -1, 64), secs)
		}
	}
	if !p.scopes.has(need) {
		return principal{}, ErrForbidden
	}
	return p, nil
}

// authenticate returns the principal of the bearer key in header (the
// Authorization header's value) for request r; the errors and the cost of
// a failure are authorize's.
func (s *Server) authenticate(r *http.Request, header string) (principal, error) {
	var prefix string
	var cached bool
	p, err := authenticate(r.Context(), func(ctx context.Context, pfx string) (keyRow, bool, error) {
		prefix = pfx
		now := s.now()
		if s.keyTTL >= 0 {
			if row, ok := s.keys.peek(pfx, now); ok {
				cached = true
				return row, true, nil
			}
		}
		if !s.failures.allow(peerAddr(r), now) {
			return keyRow{}, false, errRateLimited
		}
		if s.keyTTL < 0 {
			return lookupKey(ctx, s.pool, pfx)
		}
		return s.keys.load(ctx, s.pool, pfx, now, s.keyTTL)
	}, header)
	if errors.Is(err, ErrUnauthorized) {
		peer, now := peerAddr(r), s.now()
		if !s.failures.allow(peer, now) {
			return principal{}, errRateLimited
		}
		s.failures.charge(peer, now)
		if cached {
			if _, _, lerr := s.keys.load(r.Context(), s.pool, prefix, now, s.keyTTL); lerr != nil {
				return principal{}, lerr
			}
		}
	}
	return p, err
}

// cachedKey returns the key row of prefix through the key cache (straight
// from the database when the cache is off); found is false for an unknown
// prefix.
func (s *Server) cachedKey(ctx context.Context, prefix string) (keyRow, bool, error) {
	now := s.now()
	if s.keyTTL < 0 {
		return lookupKey(ctx, s.pool, prefix)
	}
	if row, ok := s.keys.peek(prefix, now); ok {
		return row, true, nil
	}
	return s.keys.load(ctx, s.pool, prefix, now, s.keyTTL)
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

// openAPI serves the OpenAPI document with its server URL set to the
// address the request reached (scheme and Host), so that a client
// generated from it, or "try it out", talks to this server. A Host that is
// not a plain host[:port] leaves the document's default.
// serveMetrics serves GET /metrics in Prometheus' text format when
// Config.ExposeMetrics is set (404 otherwise).
func (s *Server) serveMetrics(c echo.Context) error {
	if s.metricsHTTP == nil {
		return echo.ErrNotFound
	}
	s.metricsHTTP.ServeHTTP(c.Response(), c.Request())
	return nil
}

func (s *Server) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", specFor(c.Scheme(), c.Request().Host))
}

// specServerLine is the server URL line of api/openapi.yaml that specFor
// replaces.
const specServerLine = "\n  - url: http://127.0.0.1:8080\n"

// specFor returns the OpenAPI document naming scheme://host as its server.
func specFor(scheme, host string) []byte {
	if (scheme != "http" && scheme != "https") || !plainHost(host) {
		return openAPISpec
	}
	return bytes.Replace(openAPISpec, []byte(specServerLine), []byte("\n  - url: "+scheme+"://"+host+"\n"), 1)
}

// plainHost reports whether h is 1 to 255 bytes of letters, digits and
// ".-:[]" (a host name or IP address with an optional port): nothing that
// could break out of a YAML scalar.
func plainHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for _, r := range h {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-:[]", r)
		if !ok {
			return false
		}
	}
	return true
}
