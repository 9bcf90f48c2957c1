package api

import (
	"crypto/sha256"
	_ "embed"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice/registration"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
)

// Server serves the invoiced HTTP API. Make one with New.
type Server struct {
	pool    *pgxpool.Pool
	log     *slog.Logger
	now     func() time.Time
	opt     series.Options
	policy  document.Policy
	maxBody int64
	timeout time.Duration
	e       *echo.Echo

	exports     *readSlots // the expensive-read budget's kinds (slots.go)
	lists       *readSlots
	exportStall time.Duration
	spoolDir    string

	bytes *byteBudget // in-flight request and answer bytes (budget.go)

	committer    *invoice.Committer
	canceller    *registration.Canceller
	exposeStats  bool
	metrics      *metrics.Metrics
	metricsHTTP  http.Handler // nil: GET /metrics answers 404
	metricsToken []byte       // SHA-256 of Config.MetricsToken; nil: no token asked
	logRequests  bool
	keyTTL       time.Duration
	keys         keyCache
	failures     *failureLimiter
	keyRate      *failureLimiter // nil: no per-key limit
	series       seriesCache

	webhookAllowPrivate bool
	publicURL           string       // Config.PublicURL
	buyerDetails        BuyerDetails // Config.BuyerDetails
	spec                []byte       // the OpenAPI document served (specFor)

	inventory []RouteInfo // every route with its guards (guards.go)
}

//go:embed openapi.yaml
var openAPISpec []byte

// New returns a Server for cfg, with its defaults filled in. It does not
// touch the database.
func New(cfg Config) *Server {
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	// The counter options and the date policy of the server's own
	// transactions are its Committer's (CommitterConfig): one place for
	// their defaults.
	cc := cfg.CommitterConfig()
	s := &Server{
		pool:    cfg.Pool,
		log:     cfg.Logger,
		now:     cc.Now,
		opt:     cc.Options,
		policy:  *cc.DateWindow,
		maxBody: cfg.MaxBodyBytes,
		timeout: cfg.RequestTimeout,
		metrics: cfg.Metrics,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.timeout <= 0 {
		s.timeout = DefaultRequestTimeout
	}
	if cfg.ExposeMetrics || cfg.MetricsToken != "" {
		s.metricsHTTP = s.metrics.Handler()
	}
	if !cfg.ExposeMetrics && cfg.MetricsToken != "" {
		h := sha256.Sum256([]byte(cfg.MetricsToken))
		s.metricsToken = h[:]
	}
	s.logRequests = cfg.LogRequests
	s.committer = cfg.Committer
	if s.committer == nil && s.pool != nil { // a Server without a pool (tests of routes and headers) issues nothing
		committer, err := invoice.NewCommitter(s.pool, cc)
		if err != nil {
			panic(fmt.Sprintf("api: %v", err)) // the fields above are valid
		}
		s.committer = committer
	}
	s.canceller = registration.NewCanceller(s.pool, cfg.IRP, s.opt, cfg.IRPTimeout)
	s.exposeStats = cfg.ExposeStats
	s.webhookAllowPrivate = cfg.WebhookAllowPrivate
	s.publicURL = strings.TrimRight(cfg.PublicURL, "/")
	s.buyerDetails = cfg.BuyerDetails
	s.spec = specFor(s.publicURL)
	s.failures = newFailureLimiter(cfg.FailureRate, cfg.FailureBurst)
	if cfg.KeyRate > 0 {
		s.keyRate = &failureLimiter{rate: cfg.KeyRate, burst: max(1, cfg.KeyRate), peers: map[string]bucket{}}
	}
	s.exports = newExportSlots(cfg.MaxExports, cfg.MaxExportsPerSeller)
	s.lists = newListSlots(cfg.MaxListReads, cfg.MaxListReadsPerSeller)
	s.bytes = newByteBudget(cfg.MaxInflightBytes)
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
	s.route(e, http.MethodGet, "/healthz", ClassHealth, 0, s.healthz)
	s.route(e, http.MethodGet, "/readyz", ClassHealth, 0, s.readyz)
	s.route(e, http.MethodGet, "/openapi.yaml", ClassHealth, 0, s.openAPI)
	s.route(e, http.MethodGet, "/debug/stats", ClassMetrics, 0, s.stats)
	s.route(e, http.MethodGet, "/metrics", ClassMetrics, 0, s.serveMetrics)

	s.route(e, http.MethodPost, "/v1/series", ClassAPIWrite, apikey.CanManage, s.createSeries)
	s.route(e, http.MethodGet, "/v1/series", ClassAPIRead, apikey.CanRead, s.listSeries)
	s.route(e, http.MethodPost, "/v1/series/:code/invoices", ClassAPIWrite, apikey.CanIssue, s.issueInvoice)
	s.route(e, http.MethodPost, "/v1/series/:code/invoices/batch", ClassAPIWrite, apikey.CanIssue, s.issueBatch)
	s.route(e, http.MethodGet, "/v1/series/:code/invoices", ClassAPIList, apikey.CanRead, s.listInvoices)
	s.route(e, http.MethodGet, "/v1/invoices", ClassAPIRead, apikey.CanRead, s.findInvoices)
	s.route(e, http.MethodGet, "/v1/invoices/:id", ClassAPIRead, apikey.CanRead, s.getInvoice)
	s.route(e, http.MethodPost, "/v1/invoices/:id/cancel", ClassAPIWrite, apikey.CanIssue, s.cancelInvoice)

	s.route(e, http.MethodGet, "/r/:public_id", ClassReceipt, 0, s.receipt)

	// A webhook receives every new invoice in full: registering one reads
	// them, so it needs read as well as manage.
	s.route(e, http.MethodPost, "/v1/webhooks", ClassAPIWrite, apikey.CanManage|apikey.CanRead, s.createWebhook)
	s.route(e, http.MethodGet, "/v1/webhooks", ClassAPIRead, apikey.CanManage, s.listWebhooks)
	s.route(e, http.MethodDelete, "/v1/webhooks/:id", ClassAPIWrite, apikey.CanManage, s.deleteWebhook)
	s.route(e, http.MethodGet, "/v1/events", ClassAPIList, apikey.CanRead, s.listEvents)
	s.route(e, http.MethodGet, "/v1/series/:code/audit", ClassExport, apikey.CanRead, s.audit)
	s.route(e, http.MethodPost, "/v1/periods/:fp/lock", ClassAPIWrite, apikey.CanManage, s.lockPeriod)
	s.route(e, http.MethodGet, "/v1/periods", ClassAPIRead, apikey.CanRead, s.listPeriods)
	s.route(e, http.MethodGet, "/v1/reports/gstr1/doc-issue", ClassAPIRead, apikey.CanRead, s.docIssue)
	s.leaseRoutes(e)
}

// Handler returns the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.e }

// Options returns the series options (lock timeout) the server issues and
// cancels with.
func (s *Server) Options() series.Options { return s.opt }
