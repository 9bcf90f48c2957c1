package api

import (
	"fmt"
	"github.com/invoiced/invoiced/einvoice"
	"log/slog"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
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
	// Citus says the database is a Citus coordinator, distributed by
	// seller (docs/scale-out.md): the server's own transactions take the
	// routed form and its Committer runs in Citus mode. The pool needs
	// db.ForCitus.
	Citus bool
	// Committer issues the invoices. The caller builds it with the
	// batching policy it chose (cmd/invoiced: --batches-in-flight,
	// --citus-batch, invoice.InFlightFor) on the fields CommitterConfig
	// returns, which the server's requests need. Nil: the server builds
	// one on Pool from CommitterConfig, with one transaction in flight.
	Committer *invoice.Committer
	// KeyCacheTTL is how long a looked-up API key is trusted before the
	// database is asked again, so a revoked key keeps working for at most
	// this long; 0 means 5s, negative asks the database on every request.
	KeyCacheTTL time.Duration
	// ExposeStats serves GET /debug/stats (group-commit counters, no
	// tenant data); otherwise that route answers 404.
	ExposeStats bool
	// Metrics receives the server's metrics; nil gives the server a set of
	// its own. Its Handler is served at GET /metrics to anyone when
	// ExposeMetrics is set (tests, a server on a private network), to a
	// request with "Authorization: Bearer <MetricsToken>" when that is
	// set (a wrong or missing token is 401 and spends the address's
	// failure budget), and otherwise not at all (404: serve gives it a
	// listener of its own, --metrics-addr, loopback by default). Volume
	// and chain alerts are no tenant's business.
	Metrics       *metrics.Metrics
	ExposeMetrics bool
	MetricsToken  string
	// LogRequests writes one Info line per request to Logger (request
	// id, route, status, duration, seller GSTIN, series code; never a
	// body, a query or buyer data).
	LogRequests bool

	// MaxInflightBytes bounds the bytes that requests in progress hold in
	// buffers: bodies as they arrive, answers while they are built and
	// sent (budget.go). Past it, or past a quarter of it for one seller, a
	// request gets 503 server_busy with Retry-After before its buffer
	// grows. 0 means DefaultMaxInflightBytes.
	MaxInflightBytes int64

	// MaxExports bounds the audit exports in progress at once over all
	// sellers, MaxExportsPerSeller those of one seller; past either the
	// request gets 429 too_many_exports. 0 means the default.
	MaxExports          int
	MaxExportsPerSeller int
	// MaxListReads bounds the list pages (invoices of a series, events)
	// being read at once over all sellers, MaxListReadsPerSeller those of
	// one seller; a list waits up to 2 s for a slot, then gets 429
	// too_many_reads. A page gives its slot back before it is sent. 0
	// means the default.
	MaxListReads          int
	MaxListReadsPerSeller int
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
	// may make (a second's worth at once), a request carrying several
	// invoices (a batch, a device upload) counting one per invoice; past
	// it the request gets 429 rate_limited with Retry-After, and so does a
	// request carrying more invoices than a second's worth (it could never
	// pass; its message says the most allowed). 0 means no limit.
	KeyRate float64
	// IRP is the e-invoice registrar (an *irp.Client) through which a
	// cancel of a registered invoice cancels its IRN first
	// (docs/e-invoice.md); nil when the server has no IRP configured: such
	// a cancel is then refused (503 e_invoicing_not_configured).
	IRP einvoice.Registrar
	// IRPTimeout is IRP's longest wait for one answer; 0 means
	// irp.DefaultTimeout.
	IRPTimeout time.Duration
	// WebhookAllowPrivate lets webhooks be registered for URLs that
	// resolve to loopback, private or link-local addresses (tests,
	// on-premises receivers); otherwise they are refused (SSRF). The
	// Deliverer has its own switch for the addresses it connects to.
	WebhookAllowPrivate bool
	// PublicURL is the base URL clients reach the server at (scheme, host
	// and any path prefix, no trailing slash), e.g.
	// "https://bills.example.in": receipt_url is then absolute under it.
	// "" leaves receipt_url a path ("/r/…"), as the server cannot know its
	// own public address behind a proxy.
	PublicURL string
	// BuyerDetails says what becomes of an invoice that lacks the
	// recipient's particulars CGST Rule 46 asks for (a registered buyer's
	// address; an unregistered buyer's name and addresses from ₹50,000:
	// document.CheckParticulars). The zero value, RequireBuyerDetails,
	// refuses it (422 particulars_missing).
	BuyerDetails BuyerDetails
}

// BuyerDetails is a policy for invoices without the recipient's
// particulars (Config.BuyerDetails).
type BuyerDetails int

// The policies, as `serve --buyer-details` names them.
const (
	// RequireBuyerDetails refuses the invoice, 422 particulars_missing.
	RequireBuyerDetails BuyerDetails = iota
	// WarnBuyerDetails issues it, logs a warning naming seller, series,
	// number and what is missing, and answers with a Warning header: for a
	// transition while integrations learn to send addresses.
	WarnBuyerDetails
)

// ParseBuyerDetails returns the policy named s: "require" or "warn". It
// fails for any other name.
func ParseBuyerDetails(s string) (BuyerDetails, error) {
	switch s {
	case "require":
		return RequireBuyerDetails, nil
	case "warn":
		return WarnBuyerDetails, nil
	}
	return 0, fmt.Errorf("buyer details policy %q is not require or warn", s)
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

// CommitterConfig returns the invoice.Config fields that follow from cfg,
// for a Committer of this server: the counter options (LockTimeout,
// default 3s; Citus' routed writes; the lock-wait metric of Metrics), the
// invoice-date window of BackdateDays and the clock it is judged by (the
// database's when Now is nil), Metrics as observer, Logger, Now and Citus.
// The batching policy (InFlight, MaxBatch, CitusBatch) is left to the
// caller. Pass the same Metrics to New, or
// the server's own set does not see the Committer's transactions.
func (cfg Config) CommitterConfig() invoice.Config {
	opt := series.Options{LockTimeout: cfg.LockTimeout, Routed: cfg.Citus}
	if opt.LockTimeout <= 0 {
		opt.LockTimeout = DefaultLockTimeout
	}
	cc := invoice.Config{Options: opt, Logger: cfg.Logger, Now: cfg.Now, Citus: cfg.Citus,
		DateWindow: &document.Policy{BackdateDays: cfg.BackdateDays}}
	if cfg.Now == nil {
		cc.Now, cc.DateClock = time.Now, invoice.DatabaseClock
	}
	if cfg.Metrics != nil {
		cc.Options.LockWaited = cfg.Metrics.LockWaited
		cc.Observer = cfg.Metrics
	}
	return cc
}
