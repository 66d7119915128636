package gateway

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/better-compute/vps/sqlc"
)

// Collectors are the gateway's metrics, for /metrics: the hosts refused by
// reason (this process's), the host commands' outcomes and how long the oldest unfinished one of each lane has waited.
// They are read from Postgres at each scrape, so every serve shows the same
// figures whichever process (a gateway from a report, a reconciler at a
// deadline) ended a command.
func (g *Gateway) Collectors() []prometheus.Collector {
	return []prometheus.Collector{g.refusedTotal, &commandCollector{
		q:   g.q,
		log: g.log.With("metrics", "host commands"),
		total: prometheus.NewDesc("bc_host_commands_total",
			"Host commands ended, by kind and outcome: succeeded, failed (as the host reported), or deadline (failed by the control plane).",
			[]string{"kind", "outcome"}, nil),
		oldest: prometheus.NewDesc("bc_host_command_oldest_open_seconds",
			"Age of the oldest host command not yet ended (queued or running), by lane; absent when none is.",
			[]string{"lane"}, nil),
	}}
}

// commandCollector reads the command metrics at each scrape.
type commandCollector struct {
	q             *sqlc.Queries
	log           *slog.Logger
	total, oldest *prometheus.Desc
}

func (c *commandCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.total
	ch <- c.oldest
}

func (c *commandCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	outcomes, err := c.q.CommandOutcomes(ctx)
	if err != nil {
		c.log.WarnContext(ctx, "read command outcomes", "err", err)
		return
	}
	for _, o := range outcomes {
		ch <- prometheus.MustNewConstMetric(c.total, prometheus.CounterValue, float64(o.N), o.Kind, o.Outcome)
	}
	oldest, err := c.q.OldestUnfinishedCommands(ctx)
	if err != nil {
		c.log.WarnContext(ctx, "read oldest commands", "err", err)
		return
	}
	for _, o := range oldest {
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, time.Since(o.CreatedAt).Seconds(), o.Lane)
	}
}
