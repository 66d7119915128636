package e2e

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/events"
)

// relayWatch times, beside a cluster, each instance event's way from its
// commit to Redis, where serve's hub reads it: the outbox notification,
// which Postgres sends at the commit, heard on a connection of the watch's
// own, and the event read from Redis on a subscription like the hub's. It
// splits the hub's latency (from the write's stamp) into stamp → commit
// and commit → Redis.
type relayWatch struct {
	mu    sync.Mutex
	heard map[eventKey]time.Time // the notification heard
	read  map[eventKey]time.Time // the event read from Redis
	stamp map[eventKey]time.Time // its write's stamp (updatedAt)
	stop  func()
}

// eventKey names one instance event: an instance's write stamps it anew.
type eventKey struct {
	id string
	at time.Time
}

// watchRelay starts a relayWatch on c; report stops it.
func watchRelay(b *testing.B, c *cluster) *relayWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &relayWatch{heard: map[eventKey]time.Time{}, read: map[eventKey]time.Time{}, stamp: map[eventKey]time.Time{}}
	conn, err := pgx.ConnectConfig(ctx, c.db.Config().ConnConfig)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "LISTEN outbox"); err != nil {
		b.Fatal(err)
	}
	opts, err := redis.ParseURL(c.redisURL)
	if err != nil {
		b.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	sub := rdb.PSubscribe(ctx, "bc:events:*")
	if _, err := sub.Receive(ctx); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				return // the watch stopped
			}
			now := time.Now()
			// The row's payload follows the first line (outbox_notify); a
			// large row's notification carries only its id: not timed.
			if _, payload, ok := strings.Cut(n.Payload, "\n"); ok {
				w.note(w.heard, []byte(payload), now)
			}
		}
	})
	wg.Go(func() {
		for msg := range sub.Channel() {
			w.note(w.read, []byte(msg.Payload), time.Now())
		}
	})
	w.stop = sync.OnceFunc(func() {
		cancel()
		sub.Close()
		wg.Wait()
		conn.Close(context.Background())
		rdb.Close()
	})
	b.Cleanup(w.stop) // a benchmark that fails before its report
	return w
}

// note records at in m for the instance event payload carries, if any.
func (w *relayWatch) note(m map[eventKey]time.Time, payload []byte, at time.Time) {
	p, err := events.Decode(payload)
	if err != nil || p.Instance == nil {
		return
	}
	k := eventKey{p.Instance.Instance.ID, p.Instance.Instance.UpdatedAt}
	w.mu.Lock()
	defer w.mu.Unlock()
	m[k] = at
	w.stamp[k] = p.Instance.Instance.UpdatedAt
}

// report stops the watch and reports the p50 and p99 of stamp → commit
// (the notification heard) and commit → Redis over the events it saw both
// ways.
func (w *relayWatch) report(b *testing.B) {
	w.stop()
	var commit, relay []time.Duration
	for k, heard := range w.heard {
		read, ok := w.read[k]
		if !ok {
			continue
		}
		commit = append(commit, heard.Sub(w.stamp[k]))
		relay = append(relay, read.Sub(heard))
	}
	if len(relay) == 0 {
		b.Error("the relay watch timed no event")
		return
	}
	for name, d := range map[string][]time.Duration{"stamp-commit": commit, "commit-redis": relay} {
		slices.Sort(d)
		b.ReportMetric(ms(d[len(d)/2]), name+"-p50-ms")
		b.ReportMetric(ms(d[len(d)*99/100]), name+"-p99-ms")
	}
}
