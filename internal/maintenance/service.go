package maintenance

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/invoiced/invoiced/internal/metrics"
)

// Config configures a maintenance service. A zero field takes the
// service's default (see each New function); Logger, Metrics and Now
// default to a discarding logger, a metrics set of the service's own and
// time.Now.
type Config struct {
	// Interval is the wait from the end of one run to the start of the
	// next.
	Interval time.Duration
	// FirstDelay is the wait from Loop's start to the first run.
	FirstDelay time.Duration
	// Batch is how many rows one statement of a purge deletes; the chain
	// check and the session purge have no batches.
	Batch int
	// Logger receives the outcome of runs.
	Logger *slog.Logger
	// Metrics counts what runs do and their failures.
	Metrics *metrics.Metrics
	// Now is the clock retentions are measured by.
	Now func() time.Time
}

// withDefaults returns c with each zero field taken from defaults, or
// from the package's defaults for Logger, Metrics and Now. It panics when
// the resulting Interval is not positive, or FirstDelay or Batch negative:
// a programming error of the caller.
func (c Config) withDefaults(defaults Config) Config {
	c.Interval = cmp.Or(c.Interval, defaults.Interval)
	c.FirstDelay = cmp.Or(c.FirstDelay, defaults.FirstDelay)
	c.Batch = cmp.Or(c.Batch, defaults.Batch)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = metrics.New()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Interval <= 0 || c.FirstDelay < 0 || c.Batch < 0 {
		panic("maintenance: Interval must be positive, FirstDelay and Batch not negative")
	}
	return c
}

// reporting says how Loop logs and counts a service's runs.
type reporting[R any] struct {
	// failed is the message of the warning a failed run logs, with "err"
	// and then failedAttrs of its (partial) result, if set.
	failed      string
	failedAttrs func(R) []any
	// countFailed counts a failed run; nil when the service has no such
	// metric.
	countFailed func(*metrics.Metrics)
	// succeeded logs a run that did not fail; nil logs nothing.
	succeeded func(R)
}

// service is the part every maintenance service shares: its Config, the
// work of one run, how runs are reported, and the test signal.
type service[R any] struct {
	cfg     Config
	runOnce func(context.Context) (R, error)
	report  reporting[R]
	signals testSignal[R]
}

// Loop runs the service until ctx ends: a first run after
// Config.FirstDelay, then one Config.Interval after each run ends. A run
// that fails is logged (a warning) and counted where the service has a
// failure metric, and the next is tried at
// the next interval; a run that ctx cut short is neither. Loop returns
// once ctx has ended.
func (s *service[R]) Loop(ctx context.Context) {
	t := time.NewTimer(s.cfg.FirstDelay)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.runAndReport(ctx)
		t.Reset(s.cfg.Interval)
	}
}

// runAndReport runs the service once and logs and counts the outcome as
// Loop says, then signals it to a waiting test.
func (s *service[R]) runAndReport(ctx context.Context) {
	res, err := s.runOnce(ctx)
	switch {
	case ctx.Err() != nil:
		// Stopping: a run cut short is no failure.
	case err != nil:
		if s.report.countFailed != nil {
			s.report.countFailed(s.cfg.Metrics)
		}
		attrs := []any{"err", err}
		if s.report.failedAttrs != nil {
			attrs = append(attrs, s.report.failedAttrs(res)...)
		}
		s.cfg.Logger.Warn(s.report.failed, attrs...)
	case s.report.succeeded != nil:
		s.report.succeeded(res)
	}
	s.signals.signal(res, err)
}

// outcome is one run's result and error.
type outcome[R any] struct {
	result R
	err    error
}

// testSignal hands the outcome of each run to a test that set it up
// (init, before Loop starts), so the test waits for a run instead of
// sleeping; unset, it does nothing.
type testSignal[R any] struct {
	ran chan outcome[R]
}

// init makes the channel the runs' outcomes are sent on.
func (s *testSignal[R]) init() { s.ran = make(chan outcome[R], 64) }

// signal sends a run's outcome to the test, if one is set up and has room
// for it.
func (s *testSignal[R]) signal(res R, err error) {
	if s.ran == nil {
		return
	}
	select {
	case s.ran <- outcome[R]{res, err}:
	default:
	}
}
