package httplimit

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Middleware's Prometheus collectors; WithMetrics lists them.
type metrics struct {
	admitted, rejected, shadowRejected *prometheus.CounterVec
	errors, degraded                   *prometheus.CounterVec
	latency                            *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "rlbench", Subsystem: "httplimit", Name: name, Help: help,
		}, labels)
	}
	m := &metrics{
		admitted:       counter("admitted_total", "Requests the rate limiter admitted.", "route", "policy"),
		rejected:       counter("rejected_total", "Requests the rate limiter rejected with 429.", "route", "policy"),
		shadowRejected: counter("shadow_rejected_total", "Requests shadow mode would have rejected.", "route", "policy"),
		errors:         counter("errors_total", "Requests that could not be decided (limiter or identity errors).", "route"),
		degraded:       counter("degraded_total", "Decisions taken without the shared store (fail-open, fail-closed, fallback), by outcome.", "route", "outcome"),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "rlbench", Subsystem: "httplimit", Name: "decision_duration_seconds",
			Help:    "Time spent waiting for the rate limiter's decision, in seconds.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16), // 25 µs to 0.8 s
		}, []string{"route"}),
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.admitted, m.rejected, m.shadowRejected, m.errors, m.degraded, m.latency} {
		errs = append(errs, reg.Register(c))
	}
	return m, errors.Join(errs...)
}
