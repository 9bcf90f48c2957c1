package outbox

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/invoiced/invoiced/internal/fairshare"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/internal/textcut"
	"github.com/invoiced/invoiced/webhook"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DelivererConfig configures a Deliverer.
type DelivererConfig struct {
	// Pool is the database. Required.
	Pool *pgxpool.Pool
	// Logger receives failures of the workers; nil discards them.
	Logger *slog.Logger
	// Metrics counts deliveries; nil gives the Deliverer a set of its own.
	Metrics *metrics.Metrics
	// AllowPrivate lets deliveries connect to loopback, private and
	// link-local addresses; otherwise every connection's address is
	// checked when it is dialled (a name that resolved to a public address
	// at registration and to a private one now is refused).
	AllowPrivate bool
	// Body returns the JSON body that delivers an event (the HTTP API's
	// form of it, api.EventBody). Required.
	Body func(Event) ([]byte, error)
	// Now is the clock an event's age is read by, against its created_at
	// (GiveUpAfter); nil means time.Now. Tests whose events
	// are dated by a fixed clock give that clock, so that their events do
	// not age with the real one.
	Now func() time.Time
	// Workers is how many deliveries run at once in this process; 0 means
	// DefaultWorkers.
	Workers int
	// Poll is how long an idle worker waits before it looks for due
	// deliveries again; 0 means 1s.
	Poll time.Duration
	// RetryBase is the wait after a first failed attempt; each further
	// failure doubles it, up to RetryMax, with ±20% jitter. 0 means 10s
	// and 1h.
	RetryBase, RetryMax time.Duration
	// GiveUpAfter is how long after its event a delivery is retried before
	// it is marked failed; 0 means 72h.
	GiveUpAfter time.Duration
	// Timeout bounds one attempt (connect to answer); 0 means 10s. A
	// worker claims one delivery at a time, right before it sends it, for
	// Timeout plus 30s: the claim covers the attempt, and if its worker
	// dies another takes the delivery after that.
	Timeout time.Duration
	// PerSeller is the most deliveries of one seller in flight at once in
	// this process, so that one seller's slow receivers hold at most its
	// share of the workers; 0 means half the workers, at least 1.
	PerSeller int
}

// Defaults of DelivererConfig.
const (
	DefaultWorkers = 4
	// sellersPerRound is how many sellers with due deliveries a worker
	// reads at once and then serves one delivery each, in turn.
	sellersPerRound = 64
)

// Deliverer sends webhook events: its workers claim due deliveries (FOR
// UPDATE SKIP LOCKED, then a lease), POST the event signed with the
// webhook's secret, and record the outcome. Several processes on one
// database share the work; a delivery whose worker died is taken again
// when its lease ends, so nothing is lost and each event is delivered at
// least once. Events past EventRetention are purged by serve's
// maintenance (internal/maintenance.EventPurger), beside the Deliverer.
type Deliverer struct {
	cfg      DelivererConfig
	log      *slog.Logger
	metrics  *metrics.Metrics
	client   *http.Client
	inFlight *fairshare.Slots
}

// NewDeliverer returns a Deliverer for cfg with its defaults filled in.
// It panics when cfg.Pool or cfg.Body is nil.
func NewDeliverer(cfg DelivererConfig) *Deliverer {
	if cfg.Pool == nil || cfg.Body == nil {
		panic("outbox: NewDeliverer needs a Pool and a Body")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 10 * time.Second
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = time.Hour
	}
	if cfg.GiveUpAfter <= 0 {
		cfg.GiveUpAfter = 72 * time.Hour
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.PerSeller <= 0 {
		cfg.PerSeller = max(1, cfg.Workers/2)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	d := &Deliverer{cfg: cfg, log: cfg.Logger, metrics: cfg.Metrics, inFlight: fairshare.New(cfg.PerSeller)}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.metrics == nil {
		d.metrics = metrics.New()
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout}
	if !cfg.AllowPrivate {
		dialer.Control = publicOnly
	}
	d.client = &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       30 * time.Second,
			ResponseHeaderTimeout: cfg.Timeout,
		},
		Timeout: cfg.Timeout,
		// A redirect is not followed: the answer is not 2xx, and the
		// delivery is retried at the registered URL.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return d
}

// Run runs the workers until ctx ends, then waits for the attempts in
// progress (cut short by ctx; each is recorded as due again) and returns
// nil.
func (d *Deliverer) Run(ctx context.Context) error {
	fairshare.Run(ctx, d.cfg.Workers, d.cfg.Poll, d.round, func(err error) { d.log.Warn("webhooks: claiming deliveries failed", "err", err) })
	return nil
}

// round reads the sellers with due deliveries, longest due first, and
// for each in turn whose PerSeller slots are not all taken claims one
// delivery and sends it, so every seller with due deliveries is served
// once a round whatever another's backlog or its receivers' slowness.
// Each claim's lease (Timeout + 30s) covers the one attempt that follows
// it. It returns how many deliveries it sent, and the first failure to
// claim.
func (d *Deliverer) round(ctx context.Context) (int, error) {
	lease := d.cfg.Timeout + 30*time.Second
	sellers, err := dueSellers(ctx, d.cfg.Pool, sellersPerRound)
	if err != nil {
		return 0, err
	}
	return d.inFlight.Round(sellers, func() bool { return ctx.Err() != nil }, func(s int64) (bool, error) {
		ds, err := claimSellerDeliveries(ctx, d.cfg.Pool, s, 1, lease)
		for _, dl := range ds {
			d.attempt(ctx, dl)
		}
		return len(ds) > 0, err
	})
}

// attempt sends one delivery and records its outcome.
func (d *Deliverer) attempt(ctx context.Context, dl delivery) {
	start := time.Now()
	status, err := d.send(ctx, dl)
	took := time.Since(start)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	now := time.Now()
	var state, outcome, msg string
	next := now
	switch {
	case err == nil && status >= 200 && status < 300:
		state, outcome = "delivered", "delivered"
	case ctx.Err() != nil:
		// Stopping: due again at once, for this or another process.
		state, outcome, msg = "pending", "retry", "interrupted: the server stopped"
	default:
		if err != nil {
			msg = err.Error()
		} else {
			msg = "HTTP " + strconv.Itoa(status)
		}
		if d.cfg.Now().Sub(dl.ev.CreatedAt) >= d.cfg.GiveUpAfter {
			state, outcome = "failed", "failed"
		} else {
			state, outcome, next = "pending", "retry", now.Add(d.backoff(dl.attempts))
		}
	}
	d.metrics.WebhookDelivery(outcome, took)
	if err := finishDelivery(rctx, d.cfg.Pool, dl, state, status, textcut.To(msg, 300), next); err != nil {
		// The lease ends and the delivery is tried again: at least once.
		d.log.Warn("webhooks: recording a delivery failed", "err", err)
	}
}

// backoff returns the wait after the attempts-th failed attempt.
func (d *Deliverer) backoff(attempts int) time.Duration {
	return fairshare.Backoff(d.cfg.RetryBase, d.cfg.RetryMax, attempts)
}

// send POSTs dl's event to its webhook and returns the answer's status.
func (d *Deliverer) send(ctx context.Context, dl delivery) (int, error) {
	body, err := d.cfg.Body(dl.ev)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, dl.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "invoiced-webhooks/1")
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(dl.secret, body, time.Now()))
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// Drained so the connection can be reused; only the status counts, so
	// a body that fails to arrive changes nothing.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}
