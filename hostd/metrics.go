package hostd

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are what the daemon counts as it converges and reports.
type metrics struct {
	step          prometheus.Histogram
	runtimeErrors *prometheus.CounterVec
	reports       *prometheus.CounterVec
	lastReport    prometheus.Gauge
	// reported is when a report was last accepted, in unix nanoseconds;
	// 0 before the first.
	reported atomic.Int64
}

func newMetrics() *metrics {
	return &metrics{
		step: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "bc_hostd_converge_step_seconds",
			Help:    "Time one instance's converge step took (define, start, shutdown, pause, resume or undefine), from its dispatch to its end.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
		}),
		runtimeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bc_hostd_runtime_errors_total",
			Help: "Runtime operations that failed, by operation (define, start, resume, shutdown, pause, undefine, list).",
		}, []string{"op"}),
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bc_hostd_reports_total",
			Help: "Reports posted to the host gateway, by outcome (ok, error).",
		}, []string{"outcome"}),
		lastReport: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bc_hostd_last_report_timestamp_seconds",
			Help: "When the host gateway last accepted a report, in unix seconds; 0 before the first.",
		}),
	}
}

// Collectors are the daemon's metrics, for /metrics.
func (d *Daemon) Collectors() []prometheus.Collector {
	m := d.metrics
	m.runtimeErrors.WithLabelValues("list") // present before the first failure
	return []prometheus.Collector{m.step, m.runtimeErrors, m.reports, m.lastReport}
}

// reportDone records one post of a report.
func (m *metrics) reportDone(err error) {
	if err != nil {
		m.reports.WithLabelValues("error").Inc()
		return
	}
	now := time.Now()
	m.reports.WithLabelValues("ok").Inc()
	m.lastReport.Set(float64(now.UnixNano()) / 1e9)
	m.reported.Store(now.UnixNano())
}

// Ready reports whether the host gateway accepted a report within the last
// three heartbeats: a daemon that cannot report is not doing its job.
func (d *Daemon) Ready(context.Context) error {
	last := d.metrics.reported.Load()
	if last == 0 {
		return fmt.Errorf("no report accepted yet by %s", d.cfg.ServerURL)
	}
	if since := time.Since(time.Unix(0, last)); since > 3*d.cfg.HeartbeatInterval {
		return fmt.Errorf("no report accepted by %s for %s", d.cfg.ServerURL, since.Round(time.Second))
	}
	return nil
}
