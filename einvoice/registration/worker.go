package registration

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/irp"
	"github.com/invoiced/invoiced/internal/fairshare"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config configures a Worker.
type Config struct {
	// Pool is the database. Required.
	Pool *pgxpool.Pool
	// Registrar is the IRP (an *irp.Client). Required.
	Registrar einvoice.Registrar
	// Options are the series options a cancel of an invoice takes (the
	// API's: lock timeout, Citus' routed form).
	Options series.Options
	// Logger receives what the workers cannot do; nil discards it.
	Logger *slog.Logger
	// Metrics counts outcomes; nil gives the Worker a set of its own.
	Metrics *metrics.Metrics
	// Now is the clock of the records; nil means time.Now.
	Now func() time.Time
	// Workers is how many registrations are settled at once in this
	// process; 0 means DefaultWorkers.
	Workers int
	// PerSeller is the most of one seller's registrations in flight at
	// once in this process; 0 means half the workers, at least 1.
	PerSeller int
	// Poll is how long an idle worker waits before it looks again; 0
	// means 1s.
	Poll time.Duration
	// RetryBase is the wait after a first attempt that must be repeated
	// (no answer, the IRP busy); each further one doubles it, up to
	// RetryMax, with ±20% jitter. 0 means 5s and 15m. An attempt the
	// credentials failed waits RetryMax.
	RetryBase, RetryMax time.Duration
	// Timeout is the registrar's longest wait for one answer; 0 means
	// irp.DefaultTimeout. It sizes the lease.
	Timeout time.Duration
	// Lease is how long a claim holds a row: a worker that dies leaves it
	// to another after that. 0 means three answers' Timeout (a
	// registration, its recovery and an IRN's cancel) plus 30s.
	Lease time.Duration
}

// DefaultWorkers is Config.Workers' default.
const DefaultWorkers = 2

// Rounds read this many sellers with work at once, and take this many
// queued events of a seller into e_invoices per transaction.
const (
	sellersPerRound = 64
	takenPerSeller  = 500
)

// Worker registers the B2B invoices and notes of e-invoicing sellers at
// the IRP and cancels the IRNs of cancelled ones: its workers take the
// queued events into e_invoices, claim due rows (FOR UPDATE SKIP LOCKED,
// then a lease), settle each with the IRP (settle.go) and record the
// outcome. Several processes on one database share the work; a row whose
// worker died is claimed again when its lease ends, and a registration
// that may have been sent is never sent as new: RegisterOnce recovers it.
type Worker struct {
	cfg      Config
	log      *slog.Logger
	metrics  *metrics.Metrics
	inFlight *fairshare.Slots
}

// NewWorker returns a Worker for cfg with its defaults filled in. It
// panics when cfg.Pool or cfg.Registrar is nil.
func NewWorker(cfg Config) *Worker {
	if cfg.Pool == nil || cfg.Registrar == nil {
		panic("registration: NewWorker needs a Pool and a Registrar")
	}
	cfg.Workers = cmp.Or(max(cfg.Workers, 0), DefaultWorkers)
	cfg.PerSeller = cmp.Or(max(cfg.PerSeller, 0), max(1, cfg.Workers/2))
	cfg.Poll = cmp.Or(max(cfg.Poll, 0), time.Second)
	cfg.RetryBase = cmp.Or(max(cfg.RetryBase, 0), 5*time.Second)
	cfg.RetryMax = cmp.Or(max(cfg.RetryMax, 0), 15*time.Minute)
	cfg.Timeout = cmp.Or(max(cfg.Timeout, 0), irp.DefaultTimeout)
	cfg.Lease = cmp.Or(max(cfg.Lease, 0), 3*cfg.Timeout+30*time.Second)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	w := &Worker{cfg: cfg, log: cfg.Logger, metrics: cfg.Metrics, inFlight: fairshare.New(cfg.PerSeller)}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.metrics == nil {
		w.metrics = metrics.New()
	}
	return w
}

// Run runs the workers until ctx ends, then waits for the attempts in
// progress (cut short by ctx; each is recorded as due again) and returns
// nil.
func (w *Worker) Run(ctx context.Context) error {
	fairshare.Run(ctx, w.cfg.Workers, w.cfg.Poll, w.Round, func(err error) { w.log.Warn("e-invoicing: a round failed", "err", err) })
	return nil
}

// Round does one round of one worker: it takes the queued events of up to
// sellersPerRound sellers into e_invoices, then, for each seller with due
// rows whose share of the workers is not all in flight, claims one row and
// settles it, so every seller with due work is served once a round. It
// returns how many events and rows it took, and the first failure of the
// database.
func (w *Worker) Round(ctx context.Context) (int, error) {
	now := w.cfg.Now()
	queued, err := irpDueSellers(ctx, w.cfg.Pool, sellersPerRound)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range queued {
		k, err := takeQueued(ctx, w.cfg.Pool, s, takenPerSeller, now)
		n += k
		if err != nil {
			return n, err
		}
	}
	due, err := dueSellers(ctx, w.cfg.Pool, sellersPerRound)
	if err != nil {
		return n, err
	}
	settled, err := w.inFlight.Round(due, func() bool { return ctx.Err() != nil }, func(s int64) (bool, error) {
		r, ok, err := claim(ctx, w.cfg.Pool, s, w.cfg.Lease)
		if ok {
			w.settle(ctx, r)
		}
		return ok, err
	})
	return n + settled, err
}

// backoff returns the wait after the attempts-th attempt that must be
// repeated.
func (w *Worker) backoff(attempts int) time.Duration {
	return fairshare.Backoff(w.cfg.RetryBase, w.cfg.RetryMax, attempts)
}
