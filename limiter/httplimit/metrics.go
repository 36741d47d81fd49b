package httplimit

import (
	"errors"
	"sync"

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

// routeMetrics are one route's collectors, resolved once when the
// middleware is built, so that a request looks up no label but the policy.
type routeMetrics struct {
	latency                            prometheus.Observer
	errors                             prometheus.Counter
	degraded                           [2]prometheus.Counter // by outcome: rejected, admitted
	admitted, rejected, shadowRejected *policyCounters
}

func (m *metrics) forRoute(name string) *routeMetrics {
	return &routeMetrics{
		latency:        m.latency.WithLabelValues(name),
		errors:         m.errors.WithLabelValues(name),
		degraded:       [2]prometheus.Counter{m.degraded.WithLabelValues(name, "rejected"), m.degraded.WithLabelValues(name, "admitted")},
		admitted:       &policyCounters{vec: m.admitted, route: name},
		rejected:       &policyCounters{vec: m.rejected, route: name},
		shadowRejected: &policyCounters{vec: m.shadowRejected, route: name},
	}
}

// policyCounters are the counters of one route by policy, resolved on
// first use: policies come from configuration, so there are few.
type policyCounters struct {
	vec    *prometheus.CounterVec
	route  string
	byName sync.Map // policy → prometheus.Counter
}

func (c *policyCounters) get(policy string) prometheus.Counter {
	if v, ok := c.byName.Load(policy); ok {
		return v.(prometheus.Counter)
	}
	v, _ := c.byName.LoadOrStore(policy, c.vec.WithLabelValues(c.route, policy))
	return v.(prometheus.Counter)
}
