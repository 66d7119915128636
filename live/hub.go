// Package live fans instance, sandbox and provider bootstrap events out to
// GraphQL subscribers (bootstrap events to operators only). Each serve
// process holds one Redis subscription and routes every event in memory to
// the subscribers allowed to see it whose filter matches: no Redis
// connection per subscriber. A subscriber that falls behind is dropped, so
// it never slows anyone else; when the Redis subscription drops and comes
// back, every subscriber is told to resync from Postgres.
package live

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/internal/vps"
)

// Config configures a Hub.
type Config struct {
	// Redis carries the events. Required.
	Redis redis.UniversalClient
	// Prefix starts every Redis channel. Default vps.DefaultRedisPrefix.
	Prefix string
	// Buffer is how many events a subscriber may fall behind before it is
	// dropped. Default DefaultBuffer.
	Buffer int
	// Logger logs. Default slog.Default().
	Logger *slog.Logger
}

// DefaultBuffer is the default Config.Buffer: how many events a subscriber
// may fall behind before it is dropped.
const DefaultBuffer = 256

func (c *Config) applyDefaults() {
	if c.Prefix == "" {
		c.Prefix = vps.DefaultRedisPrefix
	}
	if c.Buffer <= 0 {
		c.Buffer = DefaultBuffer
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Hub routes events to subscribers.
type Hub struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics

	mu        sync.RWMutex
	byTenant  map[string]map[*Sub]struct{}
	operators map[*Sub]struct{}
	// lostAt is when the Redis subscription last dropped; events committed
	// shortly before may have been lost with it.
	lostAt time.Time
}

// New returns a Hub; Run must run for it to receive events.
func New(cfg Config) *Hub {
	cfg.applyDefaults()
	return &Hub{
		cfg: cfg, log: cfg.Logger, metrics: newMetrics(),
		byTenant: map[string]map[*Sub]struct{}{}, operators: map[*Sub]struct{}{},
	}
}

// Collectors are the hub's Prometheus metrics.
func (h *Hub) Collectors() []prometheus.Collector { return h.metrics.collectors() }

// Buffer is how many events a subscriber may fall behind before it is
// dropped.
func (h *Hub) Buffer() int { return h.cfg.Buffer }

// Delivery is what a subscriber receives: an event (an instance's, a
// sandbox's or a provider bootstrap's, as it subscribed), or a call to
// resync.
type Delivery struct {
	Event     *events.InstanceEvent
	Sandbox   *events.SandboxEvent
	Bootstrap *events.BootstrapEvent
	// Resync: events may have been lost since Since; read the current
	// state again.
	Resync bool
	Since  time.Time
}

// Sub is one subscription.
type Sub struct {
	// C delivers events in the order Redis delivered them.
	C       chan Delivery
	tenant  string
	match   func(*events.InstanceEvent) bool
	sandbox func(*events.SandboxEvent) bool
	// bootstrap: a subscriber of provider bootstrap events takes them all.
	bootstrap bool
	// shared: the subscription serves others (SubscribeShared); its
	// holder counts them, the hub does not count it.
	shared  bool
	dropped chan struct{}
	once    sync.Once
	onDrop  func(reason string)
}

// Dropped is closed when the hub gave up on the subscriber.
func (s *Sub) Dropped() <-chan struct{} { return s.dropped }

// Subscribe registers a subscriber that sees the events of tenant (an API
// tenant ID; "" sees every tenant's, for operators) that match. onDrop is
// called, once, if it falls behind.
func (h *Hub) Subscribe(tenant string, match func(*events.InstanceEvent) bool, onDrop func(reason string)) *Sub {
	return h.add(&Sub{tenant: tenant, match: match, onDrop: onDrop})
}

// SubscribeShared is Subscribe for a subscription that serves other
// subscribers (a group's, in graph): the hub's metrics leave it out, and
// its holder counts the subscribers it serves with Members and Queued.
func (h *Hub) SubscribeShared(tenant string, match func(*events.InstanceEvent) bool) *Sub {
	return h.add(&Sub{tenant: tenant, match: match, shared: true})
}

// SubscribeSandboxes is Subscribe for sandbox events.
func (h *Hub) SubscribeSandboxes(tenant string, match func(*events.SandboxEvent) bool, onDrop func(reason string)) *Sub {
	return h.add(&Sub{tenant: tenant, sandbox: match, onDrop: onDrop})
}

// SubscribeBootstraps registers an operator's subscriber to every provider
// bootstrap's events: they travel on the operators' channel, which no
// tenant's subscriber sees.
func (h *Hub) SubscribeBootstraps(onDrop func(reason string)) *Sub {
	return h.add(&Sub{bootstrap: true, onDrop: onDrop})
}

func (h *Hub) add(s *Sub) *Sub {
	s.C, s.dropped = make(chan Delivery, h.cfg.Buffer), make(chan struct{})
	tenant := s.tenant
	h.mu.Lock()
	defer h.mu.Unlock()
	if tenant == "" {
		h.operators[s] = struct{}{}
	} else {
		if h.byTenant[tenant] == nil {
			h.byTenant[tenant] = map[*Sub]struct{}{}
		}
		h.byTenant[tenant][s] = struct{}{}
	}
	if !s.shared {
		h.metrics.subscriptions.Inc()
	}
	return s
}

// Unsubscribe removes s.
func (h *Hub) Unsubscribe(s *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.tenant == "" {
		delete(h.operators, s)
	} else if subs := h.byTenant[s.tenant]; subs != nil {
		delete(subs, s)
		if len(subs) == 0 {
			delete(h.byTenant, s.tenant)
		}
	}
	if !s.shared {
		h.metrics.subscriptions.Dec()
	}
}

// send queues d for s without ever blocking: a subscriber whose buffer is
// full is dropped.
func (h *Hub) send(s *Sub, d Delivery) bool {
	select {
	case <-s.dropped:
		return false
	default:
	}
	select {
	case s.C <- d:
		return true
	default:
		s.once.Do(func() {
			close(s.dropped)
			if s.onDrop != nil {
				go s.onDrop("slow consumer: fell more than " + strconv.Itoa(h.cfg.Buffer) + " events behind")
			}
		})
		return false
	}
}

// dispatch routes one published event.
func (h *Hub) dispatch(payload string) {
	p, err := events.Decode([]byte(payload))
	var (
		tenant string // "": operators only
		at     time.Time
		d      Delivery
	)
	switch {
	case err != nil:
		return
	case p.Instance != nil:
		tenant, at, d = p.Instance.Instance.TenantID, p.Instance.Instance.UpdatedAt, Delivery{Event: p.Instance}
	case p.Sandbox != nil:
		tenant, at, d = p.Sandbox.Sandbox.TenantID, p.Sandbox.At, Delivery{Sandbox: p.Sandbox}
	case p.Bootstrap != nil:
		at, d = p.Bootstrap.Bootstrap.UpdatedAt, Delivery{Bootstrap: p.Bootstrap}
	default:
		return // a kind this process does not know
	}
	start := time.Now()
	h.mu.RLock()
	defer h.mu.RUnlock()
	deliver := func(subs map[*Sub]struct{}) {
		for s := range subs {
			if !s.wants(d) {
				continue
			}
			switch ok := h.send(s, d); {
			case s.shared:
			case ok:
				h.metrics.delivered.Inc()
			default:
				h.metrics.dropped.Inc()
			}
		}
	}
	if tenant != "" {
		deliver(h.byTenant[tenant])
	}
	deliver(h.operators)
	h.metrics.fanout.Observe(time.Since(start).Seconds())
	h.metrics.latency.Observe(time.Since(at).Seconds())
}

// wants reports whether s subscribed to the event d carries.
func (s *Sub) wants(d Delivery) bool {
	switch {
	case d.Event != nil:
		return s.match != nil && s.match(d.Event)
	case d.Sandbox != nil:
		return s.sandbox != nil && s.sandbox(d.Sandbox)
	}
	return s.bootstrap && d.Bootstrap != nil
}

// resyncAll tells every subscriber that events since lostAt may be lost.
func (h *Hub) resyncAll() {
	h.metrics.resyncs.Inc()
	h.mu.RLock()
	defer h.mu.RUnlock()
	d := Delivery{Resync: true, Since: h.lostAt}
	for _, subs := range h.byTenant {
		for s := range subs {
			h.send(s, d)
		}
	}
	for s := range h.operators {
		h.send(s, d)
	}
}

// lostMargin is how far before a dropped subscription events may have been
// lost: the relay publishes shortly after commit.
const lostMargin = 30 * time.Second

// Run holds the Redis subscription until ctx ends. go-redis reconnects and
// subscribes again after a drop; each time it does, subscribers resync.
func (h *Hub) Run(ctx context.Context) error {
	sub := h.cfg.Redis.PSubscribe(ctx, h.cfg.Prefix+"events:*")
	defer sub.Close()
	// Receive blocks without heeding ctx; closing the subscription ends it.
	stop := context.AfterFunc(ctx, func() { sub.Close() })
	defer stop()
	subscribed := false
	for {
		msg, err := sub.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			h.mu.Lock()
			if subscribed {
				h.lostAt = time.Now().Add(-lostMargin)
				h.log.WarnContext(ctx, "event subscription dropped; resyncing subscribers when it returns", "err", err)
			}
			subscribed = false
			h.mu.Unlock()
			h.metrics.connected.Set(0)
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "psubscribe" {
				continue
			}
			h.metrics.connected.Set(1)
			h.mu.RLock()
			lost := !h.lostAt.IsZero()
			h.mu.RUnlock()
			if !subscribed && lost {
				h.resyncAll()
			}
			subscribed = true
		case *redis.Message:
			h.dispatch(m.Payload)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
