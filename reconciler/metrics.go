package reconciler

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// metrics are what this process counts as it works; the gauges of the
// stream, the instances and the hosts are read at each scrape.
type metrics struct {
	reconciles  *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	periodic    *prometheus.CounterVec
	lastRun     *prometheus.GaugeVec
	runDuration *prometheus.GaugeVec
	calls       *prometheus.CounterVec
	relayed     *prometheus.CounterVec
	leader      prometheus.Gauge
}

func newMetrics() *metrics {
	return &metrics{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bc_reconcile_total",
			Help: "Keys reconciled, by kind (work topic) and outcome: ok, retry (failed, backing off) or terminal (failed for good, dropped).",
		}, []string{"kind", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bc_reconcile_duration_seconds",
			Help:    "Time one reconcile of a key took, by kind.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"kind"}),
		periodic: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bc_periodic_runs_total",
			Help: "Runs of periodic jobs this process claimed, by job and outcome (ok, error).",
		}, []string{"job", "outcome"}),
		lastRun: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "bc_periodic_last_run_timestamp_seconds",
			Help: "When the last run of a periodic job this process claimed ended, in unix seconds.",
		}, []string{"job"}),
		runDuration: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "bc_periodic_last_run_duration_seconds",
			Help: "How long the last run of a periodic job this process claimed took.",
		}, []string{"job"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bc_provider_calls_total",
			Help: "Calls to providers, by account, provider and outcome: ok, paced (held back for the rate limit, not sent) or the error's kind.",
		}, []string{"account", "provider", "outcome"}),
		relayed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bc_relay_rows_total",
			Help: "Outbox rows this process handed to Redis, by path: notified (the leader, from the row's notification) or claimed (read from the outbox).",
		}, []string{"path"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bc_relay_leader", Help: "1 while this process leads the outbox relay: it publishes every row committed from its notification.",
		}),
	}
}

// reconciled records one reconcile of a key of kind.
func (m *metrics) reconciled(kind, outcome string, took time.Duration) {
	m.reconciles.WithLabelValues(kind, outcome).Inc()
	m.duration.WithLabelValues(kind).Observe(took.Seconds())
}

// ran records one run of a periodic job.
func (m *metrics) ran(job string, err error, began time.Time) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.periodic.WithLabelValues(job, outcome).Inc()
	m.lastRun.WithLabelValues(job).Set(float64(time.Now().UnixNano()) / 1e9)
	m.runDuration.WithLabelValues(job).Set(time.Since(began).Seconds())
}

// called records one call to a provider account.
func (m *metrics) called(a *account, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
		var ce *cloud.Error
		if errors.As(err, &ce) {
			outcome = strings.ToLower(ce.Kind.String())
		}
	}
	m.calls.WithLabelValues(ids.Encode(ids.ProviderAccount, a.id), a.provider, outcome).Inc()
}

// Collectors are the reconciler's metrics, for /metrics. Call it after
// Register and Every.
// Every kind's and job's outcomes are present from the start, at 0, so a
// rate over them needs no first event.
func (r *Reconciler) Collectors() []prometheus.Collector {
	m := r.metrics
	for kind := range r.kinds {
		for _, outcome := range []string{"ok", "retry", "terminal"} {
			m.reconciles.WithLabelValues(kind, outcome)
		}
	}
	for _, p := range r.periodic {
		for _, outcome := range []string{"ok", "error"} {
			m.periodic.WithLabelValues(p.name, outcome)
		}
	}
	for _, path := range []string{"notified", "claimed"} {
		m.relayed.WithLabelValues(path)
	}
	return []prometheus.Collector{m.reconciles, m.duration, m.periodic, m.lastRun, m.runDuration, m.calls, m.relayed, m.leader, newStateCollector(r)}
}

// stateCollector reads, at each scrape, the work stream's backlog from
// Redis, the instances and hosts from Postgres and the provider accounts'
// rate budgets from this process's drivers.
type stateCollector struct {
	r   *Reconciler
	log *slog.Logger

	length, lag, pending, oldest, dead     *prometheus.Desc
	instances, hostUp, hostAge             *prometheus.Desc
	budgetLimit, budgetRemaining, budgetAt *prometheus.Desc
}

func newStateCollector(r *Reconciler) *stateCollector {
	d := prometheus.NewDesc
	return &stateCollector{
		r: r, log: r.log.With("metrics", "reconciler"),
		length:          d("bc_work_stream_length", "Entries in the work stream, acknowledged or not (trimmed near its maximum length).", nil, nil),
		lag:             d("bc_work_stream_lag", "Entries in the work stream no reconciler has read yet.", nil, nil),
		pending:         d("bc_work_stream_pending", "Entries read by a reconciler and not yet acknowledged.", nil, nil),
		oldest:          d("bc_work_stream_oldest_pending_seconds", "Age of the oldest entry read and not acknowledged; 0 when none is.", nil, nil),
		dead:            d("bc_work_dead_letters", "Entries in the dead-letter stream: work delivered too often, or of a topic no reconciler handles.", nil, nil),
		instances:       d("bc_instances", "Instances not DELETED, by pool and state.", []string{"pool", "state"}, nil),
		hostUp:          d("bc_host_up", "1 while a host reports within the host silence timeout, else 0.", []string{"host", "name", "pool"}, nil),
		hostAge:         d("bc_host_last_report_age_seconds", "Time since a host last reported; absent for a host that never did.", []string{"host", "name", "pool"}, nil),
		budgetLimit:     d("bc_provider_rate_limit", "The request budget a provider account's rate limit allows, as its last response stated.", []string{"account", "provider"}, nil),
		budgetRemaining: d("bc_provider_rate_limit_remaining", "Requests left of a provider account's rate-limit budget, as its last response stated.", []string{"account", "provider"}, nil),
		budgetAt:        d("bc_provider_rate_limit_reset_timestamp_seconds", "When a provider account's rate-limit budget is full again, in unix seconds.", []string{"account", "provider"}, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.length, c.lag, c.pending, c.oldest, c.dead, c.instances, c.hostUp, c.hostAge, c.budgetLimit, c.budgetRemaining, c.budgetAt} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if err := c.collectStream(ctx, gauge); err != nil {
		c.log.WarnContext(ctx, "read work stream metrics", "err", err)
	}
	if err := c.collectDB(ctx, gauge); err != nil {
		c.log.WarnContext(ctx, "read instance and host metrics", "err", err)
	}
	for _, a := range c.r.cachedAccounts() {
		b := a.driver.Budget()
		if b.Limit <= 0 { // the provider states none
			continue
		}
		id := ids.Encode(ids.ProviderAccount, a.id)
		gauge(c.budgetLimit, float64(b.Limit), id, a.provider)
		gauge(c.budgetRemaining, float64(b.Remaining), id, a.provider)
		gauge(c.budgetAt, float64(b.Reset.Unix()), id, a.provider)
	}
}

type gaugeFunc func(d *prometheus.Desc, v float64, labels ...string)

func (c *stateCollector) collectStream(ctx context.Context, gauge gaugeFunc) error {
	s := c.r.stream
	var length, dead *redis.IntCmd
	var groups *redis.XInfoGroupsCmd
	var pending *redis.XPendingCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		length = p.XLen(ctx, s.key)
		dead = p.XLen(ctx, s.dead)
		groups = p.XInfoGroups(ctx, s.key)
		pending = p.XPending(ctx, s.key, group)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	gauge(c.length, float64(length.Val()))
	gauge(c.dead, float64(dead.Val()))
	for _, g := range groups.Val() {
		if g.Name == group {
			gauge(c.lag, float64(max(g.Lag, 0)))
		}
	}
	p := pending.Val()
	gauge(c.pending, float64(p.Count))
	age := 0.0
	if p.Count > 0 {
		if ms, err := strconv.ParseInt(strings.SplitN(p.Lower, "-", 2)[0], 10, 64); err == nil {
			age = time.Since(time.UnixMilli(ms)).Seconds()
		}
	}
	gauge(c.oldest, age)
	return nil
}

func (c *stateCollector) collectDB(ctx context.Context, gauge gaugeFunc) error {
	q := sqlc.New(c.r.db)
	counts, err := q.InstancesByStateAndPool(ctx)
	if err != nil {
		return err
	}
	for _, n := range counts {
		gauge(c.instances, float64(n.N), ids.Encode(ids.Pool, n.PoolID), n.State)
	}
	hosts, err := q.HostReports(ctx)
	if err != nil {
		return err
	}
	for _, h := range hosts {
		labels := []string{ids.Encode(ids.Host, h.ID), h.Name, ids.Encode(ids.Pool, h.PoolID)}
		up := 0.0
		if h.LastSeenAt != nil {
			age := h.Now.Sub(*h.LastSeenAt) // both by the database's clock, as the silence is judged
			gauge(c.hostAge, age.Seconds(), labels...)
			if age < c.r.cfg.HostSilentAfter {
				up = 1
			}
		}
		gauge(c.hostUp, up, labels...)
	}
	return nil
}
