package ratelimit

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	limited *prometheus.CounterVec
	errors  prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bc_rate_limited_total",
			Help: "Operations refused as RATE_LIMITED, by the principal's role and the operation's class.",
		}, []string{"role", "class"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bc_rate_limit_errors_total",
			Help: "Operations let through unchecked because Redis did not answer the rate limiter.",
		}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.limited, m.errors}
}
