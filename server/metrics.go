package server

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Delivery results, the "result" label of pairbench_webhook_deliveries_total.
const (
	resultStored     = "stored"      // committed by the Inbox, answered 202
	resultDuplicate  = "duplicate"   // a redelivery of one already stored
	resultIgnored    = "ignored"     // an event the Inbox does not take
	resultPing       = "ping"        // GitHub's hook test
	resultStoreError = "store_error" // the Inbox failed; refused with 503, GitHub may redeliver
	resultClosing    = "closing"     // refused with 503 during shutdown
	resultBadSig     = "bad_signature"
	resultBadType    = "bad_content_type"
	resultTooLarge   = "too_large"
	resultBadReq     = "bad_request"
)

// Metrics is the service's Prometheus registry: what the server records
// about deliveries, and counters and gauges the bot updates through the
// exported methods. It uses a registry of its own, never the global one, so
// every Server (and every test) starts from zero. Methods are safe for
// concurrent use.
type Metrics struct {
	registry *prometheus.Registry

	deliveries  *prometheus.CounterVec // event, result
	ackSeconds  prometheus.Histogram
	gaveUp      *prometheus.CounterVec // kind
	dispatches  *prometheus.CounterVec // backend, result
	githubCalls *prometheus.CounterVec // operation, code
	rateLimit   *prometheus.GaugeVec   // installation
}

// NewMetrics returns Metrics on a fresh registry, with the Go runtime and
// process collectors included.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pairbench_webhook_deliveries_total",
			Help: "Webhook deliveries received, by event and result (stored, duplicate, ignored, ping, store_error, closing, bad_signature, bad_content_type, too_large, bad_request).",
		}, []string{"event", "result"}),
		ackSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pairbench_webhook_ack_seconds",
			Help:    "Time from a webhook request's arrival to its answer.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .5, 1},
		}),
		gaveUp: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pairbench_jobs_given_up_total",
			Help: "Jobs (GitHub writes, dispatches, benches) that failed their last attempt, by kind. Each is also logged, and a bench's ends the bench as failed.",
		}, []string{"kind"}),
		dispatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pairbench_dispatches_total",
			Help: "Benches dispatched, by backend (local, actions) and result.",
		}, []string{"backend", "result"}),
		githubCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pairbench_github_api_calls_total",
			Help: "GitHub REST calls made, by endpoint (method and route template) and HTTP status code.",
		}, []string{"operation", "code"}),
		rateLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pairbench_github_rate_limit_remaining",
			Help: "Requests left in the current GitHub rate-limit window, by installation.",
		}, []string{"installation"}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.deliveries, m.ackSeconds, m.gaveUp, m.dispatches, m.githubCalls, m.rateLimit,
	)
	return m
}

// Registry returns the registry, for callers that add collectors of their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// handler serves the registry in the Prometheus text format.
func (m *Metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// Dispatched counts one bench dispatch on backend ("local", "actions") with
// result ("ok", "error", "superseded", ...).
func (m *Metrics) Dispatched(backend, result string) {
	m.dispatches.WithLabelValues(backend, result).Inc()
}

// GaveUp counts a job of kind that failed its last attempt.
func (m *Metrics) GaveUp(kind string) { m.gaveUp.WithLabelValues(kind).Inc() }

// GitHubCall counts one GitHub REST call: operation is a name from a small
// fixed set, such as the endpoint's method and route template
// ("GET /repos/{owner}/{repo}/pulls/{pull_number}"; never a raw URL, to
// bound the label values); code is the HTTP status, or 0 when no answer
// came.
func (m *Metrics) GitHubCall(operation string, code int) {
	m.githubCalls.WithLabelValues(operation, strconv.Itoa(code)).Inc()
}

// SetRateLimitRemaining records the X-RateLimit-Remaining GitHub last
// reported for an installation.
func (m *Metrics) SetRateLimitRemaining(installation int64, remaining int) {
	m.rateLimit.WithLabelValues(strconv.FormatInt(installation, 10)).Set(float64(remaining))
}
