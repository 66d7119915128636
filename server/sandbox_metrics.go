package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/ids"
)

// sandboxMetricsWindow is the window the sandbox metrics that count or
// time what happened cover.
const sandboxMetricsWindow = time.Hour

// sandboxCollector reads the sandbox metrics from Postgres at each scrape:
// every serve shows the same figures, from the partial indexes of
// vps/0010_sandbox_metric_indexes.
type sandboxCollector struct {
	svc *control.Service
	log *slog.Logger

	live, warmTarget, warmFree, warmReady, claims, created, hitRatio, start *prometheus.Desc
}

func newSandboxCollector(svc *control.Service, log *slog.Logger) *sandboxCollector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append([]string{"template"}, labels...), nil)
	}
	return &sandboxCollector{
		svc: svc, log: log,
		live:       desc("bc_sandboxes", "Sandboxes that have not ended, by template and state.", "state"),
		warmTarget: desc("bc_sandbox_warm_target", "The template's warm count."),
		warmFree:   desc("bc_sandbox_warm_free", "Free warm instances of the template's current instance version."),
		warmReady:  desc("bc_sandbox_warm_ready", "Free warm instances ready to be claimed: booted and paused."),
		claims:     desc("bc_sandbox_warm_claims", "Warm instances claimed in the last hour."),
		created:    desc("bc_sandboxes_created", "Sandboxes created in the last hour, by how they started (WARM, COLD).", "started_from"),
		hitRatio:   desc("bc_sandbox_warm_hit_ratio", "Share of the sandboxes created in the last hour that claimed a warm instance."),
		start: desc("bc_sandbox_start_seconds", "Time from createSandbox to RUNNING of the sandboxes created in the last hour, p50 and p99.",
			"started_from", "quantile"),
	}
}

func (c *sandboxCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.live, c.warmTarget, c.warmFree, c.warmReady, c.claims, c.created, c.hitRatio, c.start} {
		ch <- d
	}
}

func (c *sandboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	all, err := c.svc.AllSandboxMetrics(ctx, time.Now().Add(-sandboxMetricsWindow))
	if err != nil {
		c.log.WarnContext(ctx, "read sandbox metrics", "err", err)
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, m := range all {
		t := ids.Encode(ids.SandboxTemplate, m.TemplateID)
		for state, n := range m.Live {
			gauge(c.live, float64(n), t, state)
		}
		gauge(c.warmTarget, float64(m.WarmTarget), t)
		gauge(c.warmFree, float64(m.WarmFree), t)
		gauge(c.warmReady, float64(m.WarmReady), t)
		gauge(c.claims, float64(m.WarmClaims), t)
		if r, ok := m.WarmHitRatio(); ok {
			gauge(c.hitRatio, r, t)
		}
		for _, from := range []string{domain.StartedWarm, domain.StartedCold} {
			s := m.Starts[from]
			gauge(c.created, float64(s.Created), t, from)
			if s.Started > 0 {
				gauge(c.start, s.P50.Seconds(), t, from, "0.5")
				gauge(c.start, s.P99.Seconds(), t, from, "0.99")
			}
		}
	}
}
