// Package metrics holds the Prometheus metrics of an invoiced server: HTTP
// requests, invoices issued and cancelled, group-commit batches, counter
// lock waits, the connection pool and the idempotency-key purge. No label
// takes a value per seller, series or key, so the number of series stays
// fixed however many tenants a server holds.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is one server's set of metrics, in a registry of its own (two
// servers in one process, as in tests, do not share counts). Make one with
// New; its methods are safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	issued          *prometheus.CounterVec
	cancelled       *prometheus.CounterVec
	replays         prometheus.Counter
	batchSize       prometheus.Histogram
	batchCommit     prometheus.Histogram
	lockWait        prometheus.Histogram
	outcomeUnknown  prometheus.Counter
	mispredictions  prometheus.Counter
	keysPurged      prometheus.Counter
	keysPurgeErrors prometheus.Counter
	verifyRuns      *prometheus.CounterVec
	brokenChains    prometheus.Gauge
	verifyLast      prometheus.Gauge
	verifyDuration  prometheus.Gauge
	deliveries      *prometheus.CounterVec
	deliveryTime    prometheus.Histogram
	eventsPurged    prometheus.Counter
	eInvoices       *prometheus.CounterVec
}

// Latency buckets, in seconds: a batch commits in about a millisecond on a
// near database and a lock wait ends at --lock-timeout (3 s by default),
// so the buckets reach from 0.5 ms to 10 s.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10}

// New returns a Metrics with every metric registered, along with Go's
// runtime and process metrics.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.newHTTPMetrics()
	m.newInvoiceMetrics()
	m.newBatchMetrics()
	m.newMaintenanceMetrics()
	m.newWebhookMetrics()
	m.newEInvoiceMetrics()
	m.reg.MustRegister(m.eInvoices, m.requests, m.requestDuration, m.issued, m.cancelled, m.replays,
		m.batchSize, m.batchCommit, m.lockWait, m.outcomeUnknown, m.mispredictions, m.keysPurged, m.keysPurgeErrors,
		m.verifyRuns, m.brokenChains, m.verifyLast, m.verifyDuration, m.deliveries, m.deliveryTime, m.eventsPurged,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// newHTTPMetrics makes the metrics of HTTP requests, by route template.
func (m *Metrics) newHTTPMetrics() {
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "invoiced_http_requests_total",
		Help: "HTTP requests answered, by route template, method and status code.",
	}, []string{"route", "method", "code"})
	m.requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "invoiced_http_request_duration_seconds",
		Help:    "Time from a request's arrival to its answer, by route template and method.",
		Buckets: latencyBuckets,
	}, []string{"route", "method"})
}

// newInvoiceMetrics makes the counts of invoices issued, cancelled and
// replayed; each document type and source is present at 0 from the start.
func (m *Metrics) newInvoiceMetrics() {
	m.issued = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "invoiced_invoices_issued_total",
		Help: "Invoices issued (committed and answered 201; replays not counted), by document type and source: online (issued by the server) or device (numbered offline and uploaded).",
	}, []string{"doc_type", "source"})
	m.cancelled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "invoiced_invoices_cancelled_total",
		Help: "Invoices cancelled, by document type and source: online (cancelled through the server) or device (cancelled offline and uploaded).",
	}, []string{"doc_type", "source"})
	for _, d := range gst.DocTypes() { // present at 0 from the start
		for _, src := range []string{SourceOnline, SourceDevice} {
			m.issued.WithLabelValues(string(d), src)
			m.cancelled.WithLabelValues(string(d), src)
		}
	}
	m.replays = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "invoiced_idempotent_replays_total",
		Help: "Requests answered with the invoice an earlier request with the same Idempotency-Key issued.",
	})
}

// newBatchMetrics makes the metrics of group-commit transactions: their
// size and time, the counter rows' lock wait, unknown outcomes and
// mispredictions.
func (m *Metrics) newBatchMetrics() {
	m.batchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "invoiced_batch_size",
		Help:    "Invoices issued per committed group-commit transaction.",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512},
	})
	m.batchCommit = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "invoiced_batch_commit_duration_seconds",
		Help:    "Time of a committed group-commit transaction, from its start to COMMIT's answer.",
		Buckets: latencyBuckets,
	})
	m.lockWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "invoiced_lock_wait_seconds",
		Help:    "Time of the round trip that locks a transaction's series counter rows (the lock wait plus one round trip), also when it gave up at the lock timeout.",
		Buckets: latencyBuckets,
	})
	m.outcomeUnknown = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "invoiced_commit_outcome_unknown_total",
		Help: "Transactions whose connection failed after COMMIT was sent: their clients were answered commit_outcome_unknown and must retry with the same Idempotency-Key.",
	})
	m.mispredictions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "invoiced_mispredictions_total",
		Help: "Group-commit transactions predicted from remembered counter states that the database refused (then issued the ordinary way).",
	})
}

// newMaintenanceMetrics makes the metrics of the background work: the
// idempotency-key purge, the chain verification and the event purge.
func (m *Metrics) newMaintenanceMetrics() {
	m.keysPurged = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "invoiced_idempotency_keys_purged_total",
		Help: "Idempotency keys deleted by the retention purge.",
	})
	m.keysPurgeErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "invoiced_idempotency_key_purge_errors_total",
		Help: "Purge rounds of idempotency keys that failed (retried at the next interval).",
	})
	m.verifyRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "invoiced_chain_verify_runs_total",
		Help: "Background verifications of every seller's hash chains, serials and counters (serve --verify-interval), by result: intact, broken or failed (the database failed before the end).",
	}, []string{"result"})
	m.brokenChains = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "invoiced_chain_broken_series_years",
		Help: "Series-years with a finding (broken chain, gap, duplicate, counter mismatch) in the last completed background verification; 0 when intact.",
	})
	m.verifyLast = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "invoiced_chain_verify_last_completed_timestamp_seconds",
		Help: "Unix time at which the last background verification completed; 0 before the first.",
	})
	m.verifyDuration = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "invoiced_chain_verify_duration_seconds",
		Help: "How long the last completed background verification took.",
	})
	for _, r := range []string{"intact", "broken", "failed"} {
		m.verifyRuns.WithLabelValues(r) // present at 0 from the start
	}
	m.eventsPurged = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "invoiced_events_purged_total",
		Help: "Events deleted after their retention (30 days).",
	})
}

// newWebhookMetrics makes the metrics of webhook deliveries; each outcome
// is present at 0 from the start.
func (m *Metrics) newWebhookMetrics() {
	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "invoiced_webhook_deliveries_total",
		Help: "Webhook delivery attempts, by outcome: delivered (2xx), retry (to be tried again), failed (given up).",
	}, []string{"outcome"})
	for _, o := range []string{"delivered", "retry", "failed"} {
		m.deliveries.WithLabelValues(o)
	}
	m.deliveryTime = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "invoiced_webhook_delivery_duration_seconds",
		Help:    "Time of one webhook delivery attempt, from connecting to the receiver's answer.",
		Buckets: latencyBuckets,
	})
}

// newEInvoiceMetrics makes the count of the IRP workers' steps; each
// outcome is present at 0 from the start.
func (m *Metrics) newEInvoiceMetrics() {
	m.eInvoices = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "invoiced_einvoice_settled_total",
		Help: "Steps of the IRP workers on e-invoice registrations, by outcome: registered, failed (the IRP refused the document), cancelled, retry (asked again later: no answer, the IRP busy, credentials refused), unchanged.",
	}, []string{"outcome"})
	for _, o := range []string{"registered", "failed", "cancelled", "retry", "unchanged"} {
		m.eInvoices.WithLabelValues(o)
	}
}

// Handler returns the handler that serves the metrics in Prometheus' text
// format (or OpenMetrics when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Gather returns the current value of every metric, for tests.
func (m *Metrics) Gather() (map[string]float64, error) {
	mfs, err := m.reg.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			var v float64
			switch {
			case mt.Counter != nil:
				v = mt.Counter.GetValue()
			case mt.Gauge != nil:
				v = mt.Gauge.GetValue()
			case mt.Histogram != nil:
				v = float64(mt.Histogram.GetSampleCount())
			}
			out[mf.GetName()] += v
		}
	}
	return out, nil
}

// OtherMethod is the method label of every request whose method is not
// one of RFC 9110's (a client may send any token as a method; each would
// otherwise be a series of its own, kept for the life of the process).
const OtherMethod = "other"

// knownMethods are the method label values besides OtherMethod.
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true,
	http.MethodDelete: true, http.MethodOptions: true, http.MethodConnect: true, http.MethodTrace: true,
}

// MethodLabel returns the method label of a request with method: method
// itself for the nine methods of RFC 9110, OtherMethod for any other.
func MethodLabel(method string) string {
	if knownMethods[method] {
		return method
	}
	return OtherMethod
}

// Request records an answered HTTP request: route is the route template
// (e.g. /v1/series/:code/invoices; the caller maps unknown paths to one
// value), code the status sent. The method is folded by MethodLabel, so
// that no label takes a value the client chose.
func (m *Metrics) Request(route, method string, code int, took time.Duration) {
	method = MethodLabel(method)
	m.requests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	m.requestDuration.WithLabelValues(route, method).Observe(took.Seconds())
}

// Sources of an issued or cancelled invoice (the source label): issued or
// cancelled by a request to the server, or by an offline device and
// uploaded.
const (
	SourceOnline = "online"
	SourceDevice = "device"
)

// Issued records n invoices issued, of document type docType, from source
// (SourceOnline or SourceDevice).
func (m *Metrics) Issued(docType, source string, n int) {
	m.issued.WithLabelValues(docType, source).Add(float64(n))
}

// Cancelled records n invoices cancelled, of document type docType, from
// source (SourceOnline or SourceDevice).
func (m *Metrics) Cancelled(docType, source string, n int) {
	m.cancelled.WithLabelValues(docType, source).Add(float64(n))
}

// Replayed records a request answered with an earlier invoice.
func (m *Metrics) Replayed() { m.replays.Inc() }

// BatchCommitted records a committed group-commit transaction (see
// invoice.Observer).
func (m *Metrics) BatchCommitted(invoices int, took time.Duration) {
	m.batchSize.Observe(float64(invoices))
	m.batchCommit.Observe(took.Seconds())
}

// Mispredicted records a refused prediction (see invoice.Observer).
func (m *Metrics) Mispredicted() { m.mispredictions.Inc() }

// OutcomeUnknown records a COMMIT whose answer was lost (see
// invoice.Observer).
func (m *Metrics) OutcomeUnknown() { m.outcomeUnknown.Inc() }

// LockWaited records the round trip that locked counter rows (see
// series.Options.LockWaited).
func (m *Metrics) LockWaited(d time.Duration) { m.lockWait.Observe(d.Seconds()) }

// KeysPurged records n idempotency keys deleted by the purge.
func (m *Metrics) KeysPurged(n int64) { m.keysPurged.Add(float64(n)) }

// KeyPurgeFailed records a failed purge round.
func (m *Metrics) KeyPurgeFailed() { m.keysPurgeErrors.Inc() }

// ChainVerified records a completed background verification that found
// broken series-years with a finding, took took and ended at end.
func (m *Metrics) ChainVerified(broken int, took time.Duration, end time.Time) {
	result := "intact"
	if broken > 0 {
		result = "broken"
	}
	m.verifyRuns.WithLabelValues(result).Inc()
	m.brokenChains.Set(float64(broken))
	m.verifyLast.Set(float64(end.UnixNano()) / 1e9)
	m.verifyDuration.Set(took.Seconds())
}

// ChainVerifyFailed records a background verification the database failed.
func (m *Metrics) ChainVerifyFailed() { m.verifyRuns.WithLabelValues("failed").Inc() }

// WatchPool registers the gauges and counters of pool's statistics
// (invoiced_db_pool_*), read at each scrape. Call it once per Metrics.
func (m *Metrics) WatchPool(pool *pgxpool.Pool) {
	m.reg.MustRegister(poolCollector{pool})
}

// poolCollector reads a pgx pool's statistics at each scrape.
type poolCollector struct{ pool *pgxpool.Pool }

var poolDescs = struct {
	max, total, idle, acquired, constructing                      *prometheus.Desc
	acquires, emptyAcquires, cancelledAcquires, waitSeconds, news *prometheus.Desc
}{
	max:               desc("max_conns", "Most connections the pool may hold."),
	total:             desc("total_conns", "Connections the pool holds now (idle, acquired and being opened)."),
	idle:              desc("idle_conns", "Connections open and not in use."),
	acquired:          desc("acquired_conns", "Connections in use by requests or batches."),
	constructing:      desc("constructing_conns", "Connections being opened."),
	acquires:          desc("acquires_total", "Connections handed out by the pool."),
	emptyAcquires:     desc("empty_acquires_total", "Acquires that found no idle connection and had to wait for one to be opened or released."),
	cancelledAcquires: desc("canceled_acquires_total", "Acquires abandoned because the request's context ended first."),
	waitSeconds:       desc("empty_acquire_wait_seconds_total", "Time spent waiting by acquires that found no idle connection."),
	news:              desc("new_conns_total", "Connections opened since start."),
}

func desc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("invoiced_db_pool_"+name, help, nil, nil)
}

// Describe sends the descriptions of the pool's metrics.
func (poolCollector) Describe(ch chan<- *prometheus.Desc) {
	d := poolDescs
	for _, x := range []*prometheus.Desc{d.max, d.total, d.idle, d.acquired, d.constructing, d.acquires, d.emptyAcquires, d.cancelledAcquires, d.waitSeconds, d.news} {
		ch <- x
	}
}

// Collect sends the pool's statistics now.
func (p poolCollector) Collect(ch chan<- prometheus.Metric) {
	st := p.pool.Stat()
	d := poolDescs
	g := func(dd *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(dd, prometheus.GaugeValue, v)
	}
	c := func(dd *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(dd, prometheus.CounterValue, v)
	}
	g(d.max, float64(st.MaxConns()))
	g(d.total, float64(st.TotalConns()))
	g(d.idle, float64(st.IdleConns()))
	g(d.acquired, float64(st.AcquiredConns()))
	g(d.constructing, float64(st.ConstructingConns()))
	c(d.acquires, float64(st.AcquireCount()))
	c(d.emptyAcquires, float64(st.EmptyAcquireCount()))
	c(d.cancelledAcquires, float64(st.CanceledAcquireCount()))
	c(d.waitSeconds, st.EmptyAcquireWaitTime().Seconds())
	c(d.news, float64(st.NewConnsCount()))
}

// WebhookDelivery counts one delivery attempt with its outcome
// ("delivered", "retry" or "failed") and how long it took.
func (m *Metrics) WebhookDelivery(outcome string, took time.Duration) {
	m.deliveries.WithLabelValues(outcome).Inc()
	m.deliveryTime.Observe(took.Seconds())
}

// EInvoiceSettled counts one step of the IRP workers with its outcome
// (registered, failed, cancelled, retry, unchanged).
func (m *Metrics) EInvoiceSettled(outcome string) { m.eInvoices.WithLabelValues(outcome).Inc() }

// EventsPurged counts n events deleted after their retention.
func (m *Metrics) EventsPurged(n int64) { m.eventsPurged.Add(float64(n)) }
