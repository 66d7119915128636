package live

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	clients       prometheus.Gauge
	subscriptions prometheus.Gauge
	connected     prometheus.Gauge
	delivered     prometheus.Counter
	dropped       prometheus.Counter
	slow          prometheus.Counter
	resyncs       prometheus.Counter
	encodings     *prometheus.CounterVec
	fanout        prometheus.Histogram
	latency       prometheus.Histogram
}

func newMetrics() *metrics {
	return &metrics{
		clients: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bc_live_clients", Help: "Connected websocket clients.",
		}),
		subscriptions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bc_live_subscriptions", Help: "Live event subscriptions.",
		}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bc_live_redis_subscribed", Help: "1 while this process holds its Redis event subscription.",
		}),
		delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bc_live_events_delivered_total", Help: "Events queued for subscribers.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bc_live_events_dropped_total", Help: "Events not queued because their subscriber fell behind.",
		}),
		slow: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bc_live_slow_subscribers_total", Help: "Websocket clients closed for falling behind.",
		}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bc_live_resyncs_total", Help: "Times subscribers were told to resync after the Redis subscription came back.",
		}),
		encodings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bc_live_encodings_total", Help: "Events executed or encoded for subscribers: shared, once for every subscriber of one shape; own, for one subscriber (its snapshots, and a shared event its connection could not take as it was encoded).",
		}, []string{"kind"}),
		fanout: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "bc_live_fanout_seconds", Help: "Time to route one event to every matching subscriber.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 4, 10),
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "bc_live_event_latency_seconds", Help: "Time from an instance change's write (its updatedAt, stamped by the writing statement just before commit) to its event being queued for subscribers.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.clients, m.subscriptions, m.connected, m.delivered, m.dropped, m.slow, m.resyncs, m.encodings, m.fanout, m.latency}
}

// ClientConnected and ClientGone count websocket clients.
func (h *Hub) ClientConnected() { h.metrics.clients.Inc() }

// ClientGone counts a websocket client leaving.
func (h *Hub) ClientGone() { h.metrics.clients.Dec() }

// ClientSlow counts a websocket client closed for falling behind.
func (h *Hub) ClientSlow() { h.metrics.slow.Inc() }

// Members counts n subscribers (fewer, when negative) served through a
// shared hub subscription (SubscribeShared), so that bc_live_subscriptions
// counts subscribers however they are served.
func (h *Hub) Members(n int) { h.metrics.subscriptions.Add(float64(n)) }

// Queued counts, for a shared subscription's event, the subscribers it was
// queued for and those dropped for falling behind.
func (h *Hub) Queued(delivered, dropped int) {
	h.metrics.delivered.Add(float64(delivered))
	h.metrics.dropped.Add(float64(dropped))
}

// Encoded counts one event executed and encoded: shared for every
// subscriber of one shape, or not (own) for one subscriber.
func (h *Hub) Encoded(shared bool) {
	kind := "own"
	if shared {
		kind = "shared"
	}
	h.metrics.encodings.WithLabelValues(kind).Inc()
}
