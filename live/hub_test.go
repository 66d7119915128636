package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/live"
)

type env struct {
	t      *testing.T
	rdb    *redis.Client
	prefix string
	hub    *live.Hub
	name   string
}

func setup(t *testing.T, buffer int) *env {
	rdb, prefix := testenv.Redis(t)
	// The hub's own client carries a name, so a test can kill just its
	// connection.
	opts := *rdb.Options()
	opts.ClientName = "hub-" + strings.TrimSuffix(strings.ReplaceAll(prefix, ":", "-"), "-")
	hubRedis := redis.NewClient(&opts)
	t.Cleanup(func() { hubRedis.Close() })
	hub := live.New(live.Config{Redis: hubRedis, Prefix: prefix, Buffer: buffer, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { hub.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	e := &env{t: t, rdb: rdb, prefix: prefix, hub: hub, name: opts.ClientName}
	e.waitSubscribed()
	return e
}

func (e *env) waitSubscribed() {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, _ := e.rdb.PubSubNumPat(context.Background()).Result()
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatal("the hub did not subscribe")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// publish sends an event of tenant as the relay would.
func (e *env) publish(tenant, instance string, version int64) {
	e.t.Helper()
	ev := events.InstanceEvent{Kind: events.KindInstance, Type: events.Updated, Version: version,
		Instance: events.InstanceView{ID: instance, TenantID: tenant, PoolID: "pool_x", State: "RUNNING", Version: version, UpdatedAt: time.Now()}}
	b, _ := json.Marshal(ev)
	if err := e.rdb.Publish(context.Background(), e.prefix+"events:"+tenant, b).Err(); err != nil {
		e.t.Fatal(err)
	}
}

func next(t *testing.T, s *live.Sub) live.Delivery {
	t.Helper()
	select {
	case d := <-s.C:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("nothing delivered")
		return live.Delivery{}
	}
}

func all(*events.InstanceEvent) bool { return true }

func TestRouting(t *testing.T) {
	e := setup(t, 16)
	a := e.hub.Subscribe("tnt_a", all, nil)
	b := e.hub.Subscribe("tnt_b", all, nil)
	op := e.hub.Subscribe("", all, nil)
	onlyOne := e.hub.Subscribe("tnt_a", func(ev *events.InstanceEvent) bool { return ev.Instance.ID == "ins_2" }, nil)

	e.publish("tnt_a", "ins_1", 1)
	e.publish("tnt_a", "ins_2", 1)
	e.publish("tnt_b", "ins_3", 1)
	e.rdb.Publish(context.Background(), e.prefix+"events:tnt_a", `{"kind":"sandbox"}`) // a kind this hub does not know

	if d := next(t, a); d.Event.Instance.ID != "ins_1" {
		t.Fatalf("a got %s", d.Event.Instance.ID)
	}
	if d := next(t, a); d.Event.Instance.ID != "ins_2" {
		t.Fatalf("a got %s", d.Event.Instance.ID)
	}
	if d := next(t, b); d.Event.Instance.ID != "ins_3" {
		t.Fatalf("b got %s", d.Event.Instance.ID)
	}
	for _, want := range []string{"ins_1", "ins_2", "ins_3"} {
		if d := next(t, op); d.Event.Instance.ID != want {
			t.Fatalf("operator got %s, want %s", d.Event.Instance.ID, want)
		}
	}
	if d := next(t, onlyOne); d.Event.Instance.ID != "ins_2" {
		t.Fatalf("filtered got %s", d.Event.Instance.ID)
	}
	e.publish("tnt_a", "ins_9", 1) // a marker: nothing was queued before it
	for name, s := range map[string]*live.Sub{"a": a, "b": b, "filtered": onlyOne} {
		select {
		case d := <-s.C:
			if name != "a" || d.Event.Instance.ID != "ins_9" {
				t.Fatalf("%s got an extra %s", name, d.Event.Instance.ID)
			}
		case <-time.After(200 * time.Millisecond):
			if name == "a" {
				t.Fatal("a missed the marker")
			}
		}
	}
}

func TestSlowSubscriberIsDropped(t *testing.T) {
	e := setup(t, 4)
	reasons := make(chan string, 1)
	slow := e.hub.Subscribe("tnt_a", all, func(reason string) { reasons <- reason })
	fast := e.hub.Subscribe("tnt_a", all, nil)
	// The fast subscriber takes each event before the next is published;
	// the slow one never reads. Only the slow one falls behind.
	for i := range 20 {
		e.publish("tnt_a", fmt.Sprintf("ins_%d", i), 1)
		if d := next(t, fast); d.Event.Instance.ID != fmt.Sprintf("ins_%d", i) {
			t.Fatalf("fast subscriber got %s", d.Event.Instance.ID)
		}
	}
	select {
	case r := <-reasons:
		if r != "slow consumer: fell more than 4 events behind" {
			t.Fatalf("reason %q", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the slow subscriber was not dropped")
	}
	<-slow.Dropped()
	select {
	case <-fast.Dropped():
		t.Fatal("the fast subscriber was dropped too")
	default:
	}
}

func TestResyncAfterRedisDrops(t *testing.T) {
	e := setup(t, 16)
	s := e.hub.Subscribe("tnt_a", all, nil)
	// Kill the hub's pub/sub connection (only it); go-redis reconnects.
	list, err := e.rdb.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " name="+e.name+" ") || !strings.Contains(line, "psub=1") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "id="); ok {
				if err := e.rdb.Do(context.Background(), "CLIENT", "KILL", "ID", id).Err(); err != nil {
					t.Fatal(err)
				}
				killed++
			}
		}
	}
	if killed != 1 {
		t.Fatalf("killed %d connections, want the hub's one", killed)
	}
	d := next(t, s)
	if !d.Resync || d.Since.IsZero() || time.Since(d.Since) < 25*time.Second {
		t.Fatalf("after a drop got %+v, want a resync since before the drop", d)
	}
}
