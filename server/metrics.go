package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	operations *prometheus.CounterVec
	duration   *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bc_graphql_operations_total",
			Help: "GraphQL operations by type and outcome (ok or the first error code).",
		}, []string{"type", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bc_graphql_operation_duration_seconds",
			Help:    "Time to answer a GraphQL operation.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"type"}),
	}
	reg.MustRegister(m.operations, m.duration)
	return m
}

// observe records one answered operation.
func (m *metrics) observe(opType, outcome string, took time.Duration) {
	m.operations.WithLabelValues(opType, outcome).Inc()
	m.duration.WithLabelValues(opType).Observe(took.Seconds())
}
