package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/console"
	"github.com/invoiced/invoiced/einvoice/irp"
	"github.com/invoiced/invoiced/einvoice/registration"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/maintenance"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/migrations"
	"github.com/invoiced/invoiced/webhook/outbox"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Idempotency keys are kept at least a week: a client may retry a request
// whose answer it lost for that long and still get its invoice instead of a
// second one. The purge runs hourly (maintenance.KeyPurger).
const minKeyRetention = 7 * 24 * time.Hour

// serveConfig is what `invoiced serve` is asked to do.
type serveConfig struct {
	addr         string
	backdateDays int
	lockTimeout  time.Duration
	maxConns     int
	minConns     int
	drainTimeout time.Duration
	logFormat    string
	citusBatch   string
	// deprecated names the deprecated flags given (flag or environment):
	// parsed for one release, with no effect but a warning.
	deprecated   []string
	stats        bool
	debugAddr    string
	keyCacheTTL  time.Duration
	inFlight     int
	metricsAddr  string
	metricsToken string
	// metricsAddrGiven: --metrics-addr was set (flag or environment), so
	// an address that cannot be bound is an error, not a warning.
	metricsAddrGiven bool
	logRequests      bool
	keyRetention     time.Duration
	verifyEvery      time.Duration
	limits           limits
	cookieSecure     bool
	// Webhooks: registration of private addresses, delivery workers.
	webhookAllowPrivate bool
	webhookWorkers      int
	// publicURL is the base URL clients reach the server at ("" unknown):
	// receipt_url is absolute under it.
	publicURL string
	// buyerDetails names api.Config.BuyerDetails: require or warn.
	buyerDetails string
	// E-invoicing: the IRP's endpoint and credentials, the workers.
	irp        irpFlags
	irpWorkers int
}

// runServe parses the serve flags, then serves the HTTP API until ctx is
// cancelled. It returns nil after a clean drain, a *usageError for bad flags,
// and an error when the database is unreachable, the address cannot be
// bound, or in-flight requests did not finish within the drain timeout.
func runServe(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "serve", "[--addr HOST:PORT] [--backdate-days N] [--lock-timeout 3s] [--max-conns N] [--min-conns N] [--stats]")
	var c serveConfig
	c.define(fs)
	documentEnv(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := applyEnv(fs, e.getenv); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { c.metricsAddrGiven = c.metricsAddrGiven || f.Name == "metrics-addr" })
	c.metricsAddrGiven = c.metricsAddrGiven || e.getenv(envName("metrics-addr")) != ""
	c.deprecated = givenFlags(fs, e.getenv, deprecatedServeFlags)
	if err := c.check(); err != nil {
		return err
	}
	if err := c.limits.resolve(c.maxConns); err != nil {
		return err
	}
	var err error
	if c.publicURL, err = parsePublicURL(c.publicURL); err != nil {
		return err
	}
	return serve(ctx, e, c)
}

// deprecatedServeFlags are serve's flags kept for one release so that an
// operator's unit file keeps starting: --batching and --predict chose
// comparison paths that left the Committer (docs/changes.md).
var deprecatedServeFlags = []string{"batching", "predict"}

// givenFlags returns those of names that were set on fs, by a flag or by
// its environment variable (envName).
func givenFlags(fs *flag.FlagSet, getenv func(string) string, names []string) []string {
	var out []string
	for _, name := range names {
		given := getenv(envName(name)) != ""
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
		if given {
			out = append(out, name)
		}
	}
	return out
}

// define registers serve's flags on fs, each writing into c.
func (c *serveConfig) define(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "address to listen on (port 0 picks a free port; the bound address is printed)")
	fs.IntVar(&c.backdateDays, "backdate-days", 0, "how many days before today (IST) an invoice date may lie")
	fs.DurationVar(&c.lockTimeout, "lock-timeout", 3*time.Second, "longest wait for a series lock before answering 503 with Retry-After")
	fs.IntVar(&c.maxConns, "max-conns", 32, "database connection pool size")
	fs.IntVar(&c.minConns, "min-conns", -1, "connections opened before listening and kept open (-1: as many as --max-conns, a fixed-size pool; 0: as DATABASE_URL's pool_min_conns says, else on demand)")
	fs.DurationVar(&c.drainTimeout, "drain-timeout", 30*time.Second, "on SIGTERM/SIGINT, how long in-flight requests may take to finish")
	fs.StringVar(&c.logFormat, "log-format", "json", "log format on stderr: json or text")
	for _, name := range deprecatedServeFlags {
		fs.Bool(name, true, "deprecated, no effect: requests are always batched, and predicted on PostgreSQL (docs/changes.md); removed in the next release")
	}
	fs.StringVar(&c.citusBatch, "citus-batch", "shard", "on a Citus coordinator, what one group-commit transaction may hold: shard (the sellers whose rows share a shard) or seller (one seller); both stay on one worker (docs/scale-out.md)")
	fs.IntVar(&c.inFlight, "batches-in-flight", 0, "group-commit transactions open at once (at most --max-conns); 2 overlaps their round trips when the database is far away; 0 picks: on PostgreSQL by the measured round trip (2 above 1ms, else 1), on a Citus coordinator 2 per worker (transactions of different shard groups run on their own workers), capped at half of --max-conns; a value equal to --max-conns leaves no connection for requests outside batches")
	fs.BoolVar(&c.stats, "stats", false, "serve GET /debug/stats (group-commit counters, no tenant data)")
	fs.DurationVar(&c.keyCacheTTL, "key-cache-ttl", api.DefaultKeyCacheTTL, "how long a looked-up API key is trusted before asking the database again (a revoked key works at most this long); 0 asks every request")
	fs.BoolVar(&c.cookieSecure, "cookie-secure", false, "mark the console's session cookie Secure even on plain HTTP (behind a TLS-terminating proxy); it is Secure anyway over TLS")
	fs.StringVar(&c.debugAddr, "debug-addr", "", "also serve Go's pprof profiles on this address (e.g. 127.0.0.1:6060); off when empty")
	addLimitFlags(fs, &c.limits)
	fs.StringVar(&c.metricsAddr, "metrics-addr", defaultMetricsAddr, "serve GET /metrics on a listener of its own at this address, never on the API's unless --metrics-token asks; off: no listener (when the default address is taken, serve warns and goes on without it)")
	fs.StringVar(&c.metricsToken, "metrics-token", "", "also serve GET /metrics on the API's address to requests with \"Authorization: Bearer TOKEN\" (at least 16 characters; a wrong one is 401 and spends the address's failure budget); empty: the API's address answers 404")
	fs.BoolVar(&c.logRequests, "log-requests", true, "log one line per request (request id, route, status, duration, seller GSTIN, series code; never buyer data)")
	fs.DurationVar(&c.verifyEvery, "verify-interval", maintenance.ChainCheckInterval, "verify every seller's hash chains, serials and counters in the background this often (first "+maintenance.ChainCheckFirstDelay.String()+" after start), with the result in the invoiced_chain_* metrics; 0 turns it off (run it on one replica: each reads the whole database)")
	fs.DurationVar(&c.keyRetention, "idempotency-retention", minKeyRetention, "how long an Idempotency-Key is remembered (a retry within it replays the invoice); at least 168h; older keys are purged hourly in small batches")
	fs.BoolVar(&c.webhookAllowPrivate, "webhook-allow-private", false, "let webhooks be registered for, and delivered to, URLs that resolve to loopback, private or link-local addresses (tests, on-premises receivers); off refuses them (SSRF)")
	fs.IntVar(&c.webhookWorkers, "webhook-workers", outbox.DefaultWorkers, "webhook deliveries sent at once by this process (several processes share the work); 0 sends none from this process")
	fs.StringVar(&c.publicURL, "public-url", "", "the base URL clients reach this server at (e.g. https://bills.example.in); receipt_url in answers and webhooks is then absolute under it; empty: receipt_url is a path (/r/…)")
	fs.StringVar(&c.buyerDetails, "buyer-details", "require", "an invoice without the buyer's particulars CGST Rule 46 asks for (a registered buyer's address; from ₹50,000, an unregistered buyer's name, address and delivery address): require refuses it (422 particulars_missing); warn issues it with a Warning header and a logged warning, for a transition while integrations learn to send addresses")
	addIRPFlags(fs, &c.irp)
	fs.IntVar(&c.irpWorkers, "irp-workers", registration.DefaultWorkers, "e-invoice registrations and IRN cancels settled at once by this process with the IRP (docs/e-invoice.md; several processes share the work); 0 settles none here: another process with --irp-url must")
}

// check returns a *usageError naming the first flag whose value c cannot
// serve with, or nil.
func (c *serveConfig) check() error {
	switch {
	case c.irpWorkers < 0:
		return usageErrorf("serve: --irp-workers must be 0 or more")
	case c.backdateDays < 0:
		return usageErrorf("serve: --backdate-days must be 0 or more")
	case c.lockTimeout <= 0:
		return usageErrorf("serve: --lock-timeout must be positive")
	case c.maxConns < 1 || c.maxConns > math.MaxInt32:
		return usageErrorf("serve: --max-conns must be at least 1")
	case c.minConns < -1 || c.minConns > c.maxConns:
		return usageErrorf("serve: --min-conns must be -1 (as --max-conns), 0 or up to --max-conns")
	case c.drainTimeout <= 0:
		return usageErrorf("serve: --drain-timeout must be positive")
	case c.webhookWorkers < 0:
		return usageErrorf("serve: --webhook-workers must be 0 or more")
	case c.logFormat != "json" && c.logFormat != "text":
		return usageErrorf("serve: --log-format must be json or text")
	case c.buyerDetails != "require" && c.buyerDetails != "warn":
		return usageErrorf("serve: --buyer-details must be require or warn")
	case c.citusBatch != "shard" && c.citusBatch != "seller":
		return usageErrorf("serve: --citus-batch must be shard or seller")
	case c.inFlight < 0 || c.inFlight > invoice.MaxInFlight:
		return usageErrorf("serve: --batches-in-flight must be 0 (auto) to %d", invoice.MaxInFlight)
	case c.inFlight > c.maxConns:
		return usageErrorf("serve: --batches-in-flight %d exceeds --max-conns %d: every open batch holds a connection", c.inFlight, c.maxConns)
	case c.keyCacheTTL < 0:
		return usageErrorf("serve: --key-cache-ttl must be 0 or more")
	case c.verifyEvery < 0:
		return usageErrorf("serve: --verify-interval must be 0 (off) or more")
	case c.metricsToken != "" && len(c.metricsToken) < 16:
		return usageErrorf("serve: --metrics-token must be at least 16 characters")
	case c.keyRetention < minKeyRetention:
		return usageErrorf("serve: --idempotency-retention must be at least %s (7 days): a client retrying a lost answer must find its invoice", minKeyRetention)
	}
	return nil
}

// serve runs the API server described by c until ctx is cancelled, then
// stops accepting connections, lets in-flight requests finish (at most
// c.drainTimeout), stops the background work and closes the pool. It prints
// "listening on http://ADDR" on stdout once the socket is bound. It returns
// nil after a clean drain (or when ctx ends while the pool is still
// opening) and an error when the database or the address is unusable, the
// server fails, or the drain times out.
func serve(ctx context.Context, e env, c serveConfig) error {
	h := logHandler(c.logFormat, e.stderr)
	logger := slog.New(h)
	pool, err := openServePool(ctx, e.getenv, c)
	if err != nil {
		return err
	}
	defer pool.Close()
	if !warmServePool(ctx, pool, c, logger) {
		return nil // stopped before serving anything
	}

	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer ln.Close() // Shutdown closes it too; a second Close is harmless.
	maxConnections := c.limits.connectionLimit(c.maxConns)
	ln = limitListener(ln, maxConnections)

	b, err := openBackend(ctx, pool, c, logger)
	if err != nil {
		return err
	}
	apiConfig, err := b.apiConfig(c)
	if err != nil {
		return err
	}
	apiSrv := api.New(apiConfig)
	con := console.New(console.Config{Pool: pool, Keys: apiSrv, Logger: logger, Now: time.Now, CookieSecure: c.cookieSecure})
	srv := newHTTPServer(c, apiSrv, con, h)

	stopBackground := b.startBackground(ctx, c, apiSrv, con)
	defer stopBackground() // before the deferred pool.Close
	metricsAt, stopSide, err := serveSideListeners(c, b.metrics, logger)
	if err != nil {
		return err
	}
	defer stopSide()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	addr := ln.Addr().String()
	// The addresses go in the log line (JSON by default), not as plain
	// lines among the logs; stdout keeps the one line scripts wait for.
	logger.Info("listening", "addr", addr, "metrics", metricsAt, "metrics_token", c.metricsToken != "",
		"console", "http://"+addr+"/console/", "backdate_days", c.backdateDays,
		"lock_timeout", c.lockTimeout.String(), "max_conns", c.maxConns, "max_connections", maxConnections)
	fmt.Fprintf(e.stdout, "listening on http://%s\n", addr)

	select {
	case err := <-serveErr:
		// Serve only returns early on a listener failure.
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	return drain(ctx, srv, serveErr, c.drainTimeout, logger)
}

// logHandler returns the handler of serve's log on w: JSON, or text when
// format is "text".
func logHandler(format string, w io.Writer) slog.Handler {
	if format == "text" {
		return slog.NewTextHandler(w, nil)
	}
	return slog.NewJSONHandler(w, nil)
}

// minConnsOf returns the connections serve opens before listening:
// --min-conns, where -1 stands for --max-conns.
func minConnsOf(c serveConfig) int {
	if c.minConns < 0 {
		return c.maxConns
	}
	return c.minConns
}

// openServePool opens the pool serve uses, sized by c, and checks that this
// binary may serve the database's schema. It fails when the database is
// unreachable or the schema is one this binary has not migrated (or a newer
// one that does not declare this binary compatible): serving it would fail
// requests in ways the code does not expect, so serve refuses to start.
func openServePool(ctx context.Context, getenv func(string) string, c serveConfig) (*pgxpool.Pool, error) {
	pool, err := openPoolSized(ctx, getenv, int32(c.maxConns), int32(minConnsOf(c)))
	if err != nil {
		return nil, err
	}
	if err := migrations.CheckServable(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("serve: %w", err)
	}
	return pool, nil
}

// warmServePool opens pool's minimum of connections before serve listens,
// so the first requests find them open; a failure to open them all is
// logged, and the pool opens more on demand. It returns false when ctx
// ended meanwhile: serve then stops before serving anything.
func warmServePool(ctx context.Context, pool *pgxpool.Pool, c serveConfig, logger *slog.Logger) bool {
	minConns := minConnsOf(c)
	if minConns <= 0 {
		return true
	}
	t0 := time.Now()
	n, err := warmPool(ctx, pool, minConns, 10*time.Second)
	if ctx.Err() != nil {
		return false
	}
	if err != nil {
		logger.Warn("database pool: could not open every connection at start; the pool opens more on demand", "open", n, "wanted", minConns, "err", err)
	} else {
		logger.Info("database pool", "open", n, "took", time.Since(t0).Round(time.Millisecond).String())
	}
	return true
}

// backend is what serve learns of the database and the IRP before it
// builds its handlers.
type backend struct {
	pool     *pgxpool.Pool
	logger   *slog.Logger
	metrics  *metrics.Metrics
	citus    bool // the database is a Citus coordinator
	inFlight int  // group-commit transactions open at once
	// registrar is the IRP's client, nil when no IRP is configured;
	// irpConfig is its configuration (its Timeout is used either way).
	registrar *irp.Client
	irpConfig irp.Config
}

// openBackend returns the backend of pool: whether it is a Citus
// coordinator (whose settings it checks), the batches in flight (c's, or
// measured when 0), the IRP's client, and the metrics watching pool. It
// fails when a Citus coordinator lacks the settings its paths depend on or
// cannot list its workers, when the IRP's settings are wrong (a
// *usageError), when sellers e-invoice and no IRP is configured
// (checkEInvoicing), or with the database's error.
func openBackend(ctx context.Context, pool *pgxpool.Pool, c serveConfig, logger *slog.Logger) (*backend, error) {
	b := &backend{pool: pool, logger: logger, inFlight: c.inFlight}
	var err error
	if b.citus, err = db.IsCitus(ctx, pool); err != nil {
		return nil, err
	}
	if b.citus {
		// Settings the Citus paths depend on (a pooler may drop the
		// session's own): refuse to start rather than serve with unbounded
		// lock waits or refused uploads.
		if err := db.CheckCitusSettings(ctx, pool); err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
		logger.Info("group commit", "citus", "one "+c.citusBatch+" per transaction")
	}
	if b.inFlight == 0 {
		if b.inFlight, err = autoBatchesInFlight(ctx, pool, b.citus, c.maxConns, logger); err != nil {
			return nil, err
		}
	}
	irpConfig, irpOn, err := c.irp.config("serve")
	if err != nil {
		return nil, err
	}
	b.irpConfig = irpConfig
	if irpOn {
		if b.registrar, err = irp.New(irpConfig); err != nil {
			return nil, usageErrorf("serve: %v", err)
		}
	}
	if err := checkEInvoicing(ctx, pool, irpOn, c.irpWorkers, logger); err != nil {
		return nil, err
	}
	b.metrics = metrics.New()
	b.metrics.WatchPool(pool)
	return b, nil
}

// apiConfig returns the api.Config that serves c on b, with its Committer
// built. It fails when --buyer-details is neither require nor warn or the
// Committer's configuration is refused.
func (b *backend) apiConfig(c serveConfig) (api.Config, error) {
	apiConfig := api.Config{
		Pool:         b.pool,
		PublicURL:    c.publicURL,
		Logger:       b.logger,
		LockTimeout:  c.lockTimeout,
		BackdateDays: c.backdateDays,
		ExposeStats:  c.stats,
		KeyCacheTTL:  keyCacheTTL(c.keyCacheTTL),
		Citus:        b.citus,
		Metrics:      b.metrics,
		MetricsToken: c.metricsToken,
		LogRequests:  c.logRequests,

		WebhookAllowPrivate: c.webhookAllowPrivate,
		IRPTimeout:          b.irpConfig.Timeout,
	}
	if b.registrar != nil {
		apiConfig.IRP = b.registrar
	}
	var err error
	if apiConfig.BuyerDetails, err = api.ParseBuyerDetails(c.buyerDetails); err != nil {
		return api.Config{}, fmt.Errorf("serve: %w", err)
	}
	if apiConfig.BuyerDetails == api.WarnBuyerDetails {
		b.logger.Warn("serve --buyer-details warn: invoices without the buyer's particulars CGST Rule 46 asks for are issued, with a warning; switch back to require once every integration sends them")
	}
	c.limits.apiLimits(&apiConfig)
	// The batching policy is serve's (its flags and invoice.InFlightFor);
	// the rest of the Committer's config is what the API's requests need.
	for _, name := range c.deprecated {
		b.logger.Warn("serve --" + name + " is deprecated and has no effect: requests are always batched, and predicted on PostgreSQL (docs/changes.md); remove it, it goes in the next release")
	}
	cc := apiConfig.CommitterConfig()
	cc.InFlight = b.inFlight
	if c.citusBatch == "seller" {
		cc.CitusBatch = invoice.PerSeller
	}
	if apiConfig.Committer, err = invoice.NewCommitter(b.pool, cc); err != nil {
		return api.Config{}, fmt.Errorf("serve: %w", err)
	}
	return apiConfig, nil
}

// newHTTPServer returns the HTTP server of the API and the console, with
// serve's timeouts; its errors go to h at level Warn.
func newHTTPServer(c serveConfig, apiSrv *api.Server, con *console.Console, h slog.Handler) *http.Server {
	mux := http.NewServeMux()
	// The console's requests go in the API's request log and metrics.
	mux.Handle("/console/", apiSrv.Observe(con)) // "/console" redirects here
	mux.Handle("/", apiSrv.Handler())
	return &http.Server{
		Handler: mux,
		// Request contexts must not derive from ctx: a signal would cancel
		// the in-flight requests the drain is meant to finish.
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second, // bodies are at most 516 KiB
		// Longer than the api's own bound on a request's database work
		// (which includes the lock wait), so a committed invoice is never
		// answered with a cut connection.
		WriteTimeout:   max(api.DefaultRequestTimeout, c.lockTimeout) + 15*time.Second,
		IdleTimeout:    c.limits.idleTimeout,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(h, slog.LevelWarn),
	}
}

// startBackground starts serve's background work — the key and session
// purges, webhook deliveries and the event purge, the IRP workers, the
// chain check, each as c asks — on a context that ctx's end does not
// cancel, so requests still draining keep them. It returns the function
// that stops them and waits until they have.
func (b *backend) startBackground(ctx context.Context, c serveConfig, apiSrv *api.Server, con *console.Console) (stop func()) {
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var background sync.WaitGroup // maintenance and webhook deliveries
	pool, logger := b.pool, b.logger
	mcfg := maintenance.Config{Logger: logger, Metrics: b.metrics}
	background.Go(func() { maintenance.NewKeyPurger(pool, c.keyRetention, mcfg).Loop(bgCtx) })
	background.Go(func() { maintenance.NewSessionPurger(con, mcfg).Loop(bgCtx) })
	if c.webhookWorkers > 0 {
		d := outbox.NewDeliverer(outbox.DelivererConfig{Pool: pool, Logger: logger, Metrics: b.metrics,
			AllowPrivate: c.webhookAllowPrivate, Workers: c.webhookWorkers, Body: api.EventBody(c.publicURL)})
		background.Go(func() { _ = d.Run(bgCtx) }) // Run returns nil once bgCtx ends
		background.Go(func() { maintenance.NewEventPurger(pool, mcfg).Loop(bgCtx) })
	}
	if b.registrar != nil && c.irpWorkers > 0 {
		w := registration.NewWorker(registration.Config{Pool: pool, Registrar: b.registrar, Options: apiSrv.Options(),
			Logger: logger, Metrics: b.metrics, Workers: c.irpWorkers, Timeout: b.irpConfig.Timeout})
		background.Go(func() { _ = w.Run(bgCtx) }) // Run returns nil once bgCtx ends
		logger.Info("e-invoicing", "irp", b.irpConfig.BaseURL, "workers", c.irpWorkers)
	}
	if c.verifyEvery > 0 {
		vcfg := mcfg
		vcfg.Interval = c.verifyEvery
		background.Go(func() { maintenance.NewChainChecker(pool, vcfg).Loop(bgCtx) })
	}
	return func() {
		stopBackground()
		background.Wait()
	}
}

// serveSideListeners starts the listeners beside the API's that c asks
// for: pprof (--debug-addr) and the metrics (--metrics-addr). It returns
// the URL serving /metrics ("" when none), and the function that stops
// them. It fails when --debug-addr cannot be bound, or --metrics-addr when
// it was set (the default address taken is only a warning).
func serveSideListeners(c serveConfig, m *metrics.Metrics, logger *slog.Logger) (metricsAt string, stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range slices.Backward(stops) {
			s()
		}
	}
	if c.debugAddr != "" {
		stopPprof, err := servePprof(c.debugAddr, logger)
		if err != nil {
			return "", nil, err
		}
		stops = append(stops, stopPprof)
	}
	if c.metricsAddr != metricsOff {
		at, stopMetrics, err := serveMetrics(c.metricsAddr, m, logger)
		switch {
		case err != nil && !c.metricsAddrGiven:
			logger.Warn("metrics: the default address is not free; serving no /metrics listener (set --metrics-addr)", "addr", c.metricsAddr, "err", err)
		case err != nil:
			stop()
			return "", nil, err
		default:
			stops = append(stops, stopMetrics)
			metricsAt = "http://" + at + "/metrics"
		}
	}
	return metricsAt, stop, nil
}

// drain stops srv accepting connections and waits at most timeout for its
// in-flight requests, then for Serve's answer on serveErr. It returns nil
// after a clean drain, and an error when the requests did not finish in
// time (srv is then closed) or Serve failed.
func drain(ctx context.Context, srv *http.Server, serveErr <-chan error, timeout time.Duration, logger *slog.Logger) error {
	logger.Info("shutting down: draining in-flight requests", "timeout", timeout.String())
	start := time.Now()
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := srv.Shutdown(drainCtx); err != nil {
		srv.Close()
		return fmt.Errorf("serve: in-flight requests did not finish within %s: %w", timeout, err)
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("stopped", "drained_in", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// The metrics listener (--metrics-addr): loopback by default, so that only
// the host's own scraper (or an exporter's sidecar) reads the service's
// volume and chain alerts; "off" serves none.
const (
	defaultMetricsAddr = "127.0.0.1:9464"
	metricsOff         = "off"
)

// checkEInvoicing refuses to serve when a seller e-invoices, this process
// is to settle registrations (irpWorkers > 0) and no IRP is configured:
// their invoices would queue with nobody to register them. With
// --irp-workers 0 it logs that another process must. It fails with the
// sellers' GSTINs and what to set, or with the database's error.
func checkEInvoicing(ctx context.Context, pool *pgxpool.Pool, irpOn bool, irpWorkers int, logger *slog.Logger) error {
	if irpOn {
		return nil
	}
	gstins, err := registration.EInvoicingSellers(ctx, pool)
	if err != nil || len(gstins) == 0 {
		return err
	}
	list := strings.Join(gstins[:min(len(gstins), 5)], ", ")
	if len(gstins) > 5 {
		list += fmt.Sprintf(" and %d more", len(gstins)-5)
	}
	if irpWorkers == 0 {
		logger.Warn("e-invoicing: sellers e-invoice and this process has no IRP configured (--irp-workers 0): another process with --irp-url must register their invoices, and cancels of registered invoices are refused here", "sellers", list)
		return nil
	}
	return fmt.Errorf("serve: sellers %s e-invoice, and no IRP is configured: set --irp-url and the other --irp-* settings (INVOICED_IRP_*; docs/e-invoice.md), or start this process with --irp-workers 0 when another one registers their invoices", list)
}

// serveMetrics serves m's metrics at GET /metrics on addr, on a listener
// of its own (--metrics-addr). It returns the address bound and a function
// that stops it, and fails when addr cannot be bound.
func serveMetrics(addr string, m *metrics.Metrics, logger *slog.Logger) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("serve: --metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	// Serve returns http.ErrServerClosed when stop closes it; nothing else
	// can fail on a listener that is already bound.
	go func() { _ = srv.Serve(ln) }()
	logger.Info("metrics", "addr", ln.Addr().String())
	return ln.Addr().String(), func() { srv.Close() }, nil
}

// servePprof serves net/http/pprof on addr, on a listener and mux of its
// own so profiles never share the API's port. It returns a function that
// stops it, and fails when addr cannot be bound.
func servePprof(addr string, logger *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve: --debug-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }() // returns http.ErrServerClosed when stopped
	logger.Info("pprof", "addr", ln.Addr().String())
	return func() { srv.Close() }, nil
}

// keyCacheTTL maps the flag (0 = no cache) to api.Config's convention
// (negative = no cache, 0 = default).
func keyCacheTTL(flag time.Duration) time.Duration {
	if flag <= 0 {
		return -1
	}
	return flag
}

// autoBatchesInFlight returns the --batches-in-flight that 0 stands for,
// invoice.InFlightFor of what it measures: the workers of a Citus
// coordinator, else the database's round trip. It fails only when a Citus
// coordinator cannot list its workers.
func autoBatchesInFlight(ctx context.Context, pool *pgxpool.Pool, citus bool, maxConns int, logger *slog.Logger) (int, error) {
	if citus {
		workers, err := db.CitusWorkers(ctx, pool)
		if err != nil {
			return 0, err
		}
		n := invoice.InFlightFor(0, max(workers, 1), maxConns)
		logger.Info("group commit", "citus_workers", workers, "batches_in_flight", n)
		return n, nil
	}
	rtt := databaseRoundTrip(ctx, pool)
	n := invoice.InFlightFor(rtt, 0, maxConns)
	logger.Info("group commit", "database_round_trip", rtt.String(), "batches_in_flight", n)
	return n, nil
}

// databaseRoundTrip returns the median of a few pings of pool: with the
// database far away, overlapping two group-commit transactions pays off;
// near, one at a time gives larger batches.
func databaseRoundTrip(ctx context.Context, pool *pgxpool.Pool) time.Duration {
	var rtts []time.Duration
	for range 5 {
		began := time.Now()
		if err := pool.Ping(ctx); err != nil {
			return 0
		}
		rtts = append(rtts, time.Since(began))
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2]
}

// parsePublicURL returns the base URL under which clients reach the server
// (--public-url), without a trailing slash, or "" for "". It fails with a
// *usageError unless s is an absolute http or https URL with a host and no
// query or fragment.
func parsePublicURL(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery || u.User != nil {
		return "", usageErrorf("serve: --public-url %q must be an absolute http or https URL without user, query or fragment (e.g. https://bills.example.in)", s)
	}
	return strings.TrimRight(u.String(), "/"), nil
}
