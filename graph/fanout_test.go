package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/graph"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/live"
)

// fanoutEnv is an endpoint whose hub takes what relay publishes, with a
// tenant that has one instance.
type fanoutEnv struct {
	*env
	w        world
	hub      *live.Hub
	instance string
	relay    func()
	// killHub kills the hub's Redis connection (only it): go-redis
	// reconnects, and the hub tells its subscribers to resync.
	killHub func()
}

func setupFanout(t *testing.T, tune func(*graph.HandlerConfig)) fanoutEnv {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	// The hub's own client carries a name, so killHub finds its connection.
	opts := *rdb.Options()
	opts.ClientName = "hub-" + strings.TrimSuffix(strings.ReplaceAll(prefix, ":", "-"), "-")
	hubRedis := redis.NewClient(&opts)
	t.Cleanup(func() { hubRedis.Close() })
	hub := live.New(live.Config{Redis: hubRedis, Prefix: prefix})
	e := setupWith(t, func(c *graph.HandlerConfig) {
		c.Live = hub
		if tune != nil {
			tune(c)
		}
	})
	hubCtx, stop := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); hub.Run(hubCtx) }()
	t.Cleanup(func() { stop(); <-hubDone })
	w := e.world("alpha")
	inst := e.id(w.member, createInstance, map[string]any{"in": w.input("web-1")}, "createInstance", "instance", "id")
	f := fanoutEnv{env: e, w: w, hub: hub, instance: inst, relay: func() { e.relay(t, rdb, prefix) },
		killHub: func() { killClient(t, rdb, opts.ClientName) }}
	f.relay() // its creation, before anyone subscribes
	return f
}

// killClient kills the one pub/sub connection of the Redis client named name.
func killClient(t *testing.T, rdb *redis.Client, name string) {
	t.Helper()
	ctx := context.Background()
	list, err := rdb.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " name="+name+" ") || !strings.Contains(line, "psub=1") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "id="); ok {
				if err := rdb.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
					t.Fatal(err)
				}
				killed++
			}
		}
	}
	if killed != 1 {
		t.Fatalf("killed %d connections, want the hub's one", killed)
	}
}

// liveSub is one websocket subscription; next reads its next event.
type liveSub struct {
	conn *websocket.Conn
	ctx  context.Context
}

// subscribe starts query (with includeCurrent: true) as token and reads
// its snapshot of the one instance, so the subscription is attached when
// it returns.
func (f fanoutEnv) subscribe(t *testing.T, token, query string) liveSub {
	t.Helper()
	conn, ctx := f.dialWS(t, "Bearer "+token)
	return f.start(t, liveSub{conn, ctx}, token, query)
}

// subscribeSmall is subscribe on a connection whose receive buffer is as
// small as the kernel allows, so that what it leaves unread shows at once.
func (f fanoutEnv) subscribeSmall(t *testing.T, token, query string) liveSub {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024) })
	}}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.url, "http"), &websocket.DialOptions{HTTPClient: client, Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	wsjson.Write(ctx, conn, map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}})
	return f.start(t, liveSub{conn, ctx}, token, query)
}

// start reads the ack, subscribes and reads the snapshot.
func (f fanoutEnv) start(t *testing.T, s liveSub, token, query string) liveSub {
	t.Helper()
	conn, ctx := s.conn, s.ctx
	if typ, _ := s.read(t); typ != "connection_ack" {
		t.Fatalf("init: %s", typ)
	}
	wsjson.Write(ctx, conn, map[string]any{"id": "op-" + token[len(token)-4:], "type": "subscribe", "payload": map[string]any{"query": query}})
	if typ, p := s.read(t); typ != "next" || !strings.Contains(string(p), `"snapshot":true`) {
		t.Fatalf("snapshot: %s %s", typ, p)
	}
	return s
}

func (s liveSub) read(t *testing.T) (string, json.RawMessage) {
	t.Helper()
	var msg struct {
		Type    string
		ID      string
		Payload json.RawMessage
	}
	if err := wsjson.Read(s.ctx, s.conn, &msg); err != nil {
		t.Fatalf("read: %v", err)
	}
	return msg.Type, msg.Payload
}

// place moves the instance to RUNNING on host, as the reconciler does: in
// one transaction with its event.
func (f fanoutEnv) place(t *testing.T, host string) {
	t.Helper()
	f.change(f.instance, `state = 'RUNNING', host_id = $2`, decode(t, ids.Host, host))
	f.relay()
}

// sharedEncodings reads bc_live_encodings_total{kind="shared"}.
func sharedEncodings(t *testing.T, hub *live.Hub) float64 {
	t.Helper()
	return liveMetric(t, hub, "bc_live_encodings_total", "shared")
}

// liveMetric reads the hub's metric name (of kind, if it is labelled).
func liveMetric(t *testing.T, hub *live.Hub, name, kind string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(hub.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			value := m.GetCounter().GetValue() + m.GetGauge().GetValue() // one is nil
			if kind == "" {
				return value
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return value
				}
			}
		}
	}
	return 0
}

// TestFanoutShapes: subscribers of one shape share one execution per
// event; each receives exactly the fields it selected, and a member's
// shared encoding never carries the operator-only host, though an
// operator's of the same document does. bc_live_subscriptions and
// bc_live_events_delivered_total count subscribers, not groups.
func TestFanoutShapes(t *testing.T) {
	t.Parallel()
	f := setupFanout(t, nil)
	host := f.id(f.operator, `mutation($p: ID!) { createHost(input: {poolId: $p, name: "hv-1"}) { host { id } } }`,
		map[string]any{"p": f.w.pool}, "createHost", "host", "id")
	const (
		narrow = `subscription { instanceEvents(includeCurrent: true) { snapshot version instance { id state } } }`
		wide   = `subscription { instanceEvents(includeCurrent: true) { snapshot version instance { id name state host { name } } } }`
	)
	var narrows []liveSub
	for range 5 {
		narrows = append(narrows, f.subscribe(t, f.w.member, narrow))
	}
	wideMember := f.subscribe(t, f.w.member, wide)
	wideOperator := f.subscribe(t, f.operator, wide)
	before := sharedEncodings(t, f.hub)
	delivered := liveMetric(t, f.hub, "bc_live_events_delivered_total", "")

	f.place(t, host)

	want := map[string]struct {
		subs []liveSub
		data string
	}{
		"narrow, member": {narrows, `{"instanceEvents":{"snapshot":false,"version":2,"instance":{"id":"` + f.instance + `","state":"RUNNING"}}}`},
		"wide, member":   {[]liveSub{wideMember}, `{"instanceEvents":{"snapshot":false,"version":2,"instance":{"id":"` + f.instance + `","name":"web-1","state":"RUNNING","host":null}}}`},
		"wide, operator": {[]liveSub{wideOperator}, `{"instanceEvents":{"snapshot":false,"version":2,"instance":{"id":"` + f.instance + `","name":"web-1","state":"RUNNING","host":{"name":"hv-1"}}}}`},
	}
	for name, c := range want {
		t.Run(name, func(t *testing.T) {
			for _, s := range c.subs {
				typ, p := s.read(t)
				var got struct{ Data json.RawMessage }
				if err := json.Unmarshal(p, &got); err != nil || typ != "next" {
					t.Fatalf("%s %s: %v", typ, p, err)
				}
				if string(got.Data) != c.data {
					t.Fatalf("data = %s\nwant   %s", got.Data, c.data)
				}
			}
		})
	}
	t.Run("subscriptions and deliveries counted by subscriber", func(t *testing.T) {
		if n := liveMetric(t, f.hub, "bc_live_subscriptions", ""); n != 7 {
			t.Fatalf("bc_live_subscriptions = %v for 7 subscribers of 3 shapes, want 7", n)
		}
		// A delivery is counted once written, so the last may be read first.
		var n float64
		if !testenv.Within(5*time.Second, func() bool {
			n = liveMetric(t, f.hub, "bc_live_events_delivered_total", "") - delivered
			return n >= 7
		}) || n != 7 {
			t.Fatalf("bc_live_events_delivered_total grew by %v for one event to 7 subscribers, want 7", n)
		}
	})
	t.Run("one execution per shape", func(t *testing.T) {
		// Three shapes: narrow as a member, wide as a member, wide as an operator.
		if n := sharedEncodings(t, f.hub) - before; n != 3 {
			t.Fatalf("%v shared encodings for one event to 7 subscribers of 3 shapes, want 3", n)
		}
	})
}

// TestFanoutSlowMember: a member of a group that does not read is closed
// as a slow consumer alone; the others of its group receive every event
// in order.
func TestFanoutSlowMember(t *testing.T) {
	t.Parallel()
	f := setupFanout(t, func(c *graph.HandlerConfig) { c.MaxUnread = 2048 })
	const q = `subscription { instanceEvents(includeCurrent: true) { snapshot version instance { id name state stateReason } } }`
	fast := []liveSub{f.subscribe(t, f.w.member, q), f.subscribe(t, f.w.member, q)}
	slow := f.subscribeSmall(t, f.w.member, q)
	const n = 60
	for i := range n {
		f.step(f.instance, "RUNNING", strings.Repeat("x", 400)+string(rune('a'+i%26)))
		f.relay()
		for _, s := range fast {
			typ, p := s.read(t)
			var got struct {
				Data struct{ InstanceEvents struct{ Version int } }
			}
			json.Unmarshal(p, &got)
			if typ != "next" || got.Data.InstanceEvents.Version != i+2 {
				t.Fatalf("event %d: %s %s", i, typ, p)
			}
		}
	}
	var err error
	for err == nil {
		var msg map[string]any
		err = wsjson.Read(slow.ctx, slow.conn, &msg)
	}
	if status := websocket.CloseStatus(err); status != 4008 {
		t.Fatalf("the slow member ended with %v (%v), want 4008", status, err)
	}
}

// TestFanoutFrames: members write their group's encoding themselves, each
// under its own operation's id and in its protocol's message, byte for
// byte what gqlgen's transport sends; nothing is encoded per member.
func TestFanoutFrames(t *testing.T) {
	t.Parallel()
	f := setupFanout(t, nil)
	const q = `subscription { instanceEvents(includeCurrent: true) { snapshot version instance { id state } } }`
	// Three operations on one graphql-transport-ws connection, and one on
	// a graphql-ws connection.
	conn, ctx := f.dialWS(t, "Bearer "+f.w.member)
	s := liveSub{conn, ctx}
	if typ, _ := s.read(t); typ != "connection_ack" {
		t.Fatalf("init: %s", typ)
	}
	ops := []string{"a", "b", "c"}
	for _, id := range ops {
		wsjson.Write(ctx, conn, map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": q}})
		if typ, p := s.read(t); typ != "next" || !strings.Contains(string(p), `"snapshot":true`) {
			t.Fatalf("snapshot of %s: %s %s", id, typ, p)
		}
	}
	legacy, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.url, "http"), &websocket.DialOptions{Subprotocols: []string{"graphql-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer legacy.CloseNow()
	wsjson.Write(ctx, legacy, map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + f.w.member}})
	wsjson.Write(ctx, legacy, map[string]any{"id": "z", "type": "start", "payload": map[string]any{"query": q}})
	readData := func() string {
		t.Helper()
		for {
			_, b, err := legacy.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), `"type":"data"`) {
				return string(b)
			}
		}
	}
	if b := readData(); !strings.Contains(b, `"snapshot":true`) {
		t.Fatalf("legacy snapshot: %s", b)
	}
	own := liveMetric(t, f.hub, "bc_live_encodings_total", "own")

	f.step(f.instance, "RUNNING", "")
	f.relay()

	payload := `{"data":{"instanceEvents":{"snapshot":false,"version":2,"instance":{"id":"` + f.instance + `","state":"RUNNING"}}}}`
	got := map[string]string{}
	for range ops {
		_, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var msg struct{ ID string }
		json.Unmarshal(b, &msg)
		got[msg.ID] = string(b)
	}
	for _, id := range ops {
		if want := `{"payload":` + payload + `,"id":"` + id + `","type":"next"}`; got[id] != want {
			t.Errorf("operation %s got %s\nwant %s", id, got[id], want)
		}
	}
	if b, want := readData(), `{"payload":`+payload+`,"id":"z","type":"data"}`; b != want {
		t.Errorf("graphql-ws got %s\nwant %s", b, want)
	}
	if n := liveMetric(t, f.hub, "bc_live_encodings_total", "own") - own; n != 0 {
		t.Errorf("%v encodings for one member for one event to 4 members of a shape, want 0", n)
	}
}

// TestFanoutMemberResync: when the hub resyncs, a group's member reads
// what changed since before the drop (here a change whose event never
// reached Redis) and delivers it as a snapshot, then its group's events
// again.
func TestFanoutMemberResync(t *testing.T) {
	t.Parallel()
	f := setupFanout(t, nil)
	const query = `subscription { instanceEvents(includeCurrent: true) { snapshot version instance { id state } } }`
	s := f.subscribe(t, f.w.member, query)
	f.change(f.instance, `state = 'RUNNING'`) // its event stays in the outbox
	f.killHub()
	want := `{"data":{"instanceEvents":{"snapshot":true,"version":2,"instance":{"id":"` + f.instance + `","state":"RUNNING"}}}}`
	if typ, p := s.read(t); typ != "next" || string(p) != want {
		t.Fatalf("after the resync: %s %s, want the change as a snapshot: %s", typ, p, want)
	}
	// Live again: the next change comes from the group.
	f.change(f.instance, `state = 'STOPPED'`)
	f.relay()
	want = `{"data":{"instanceEvents":{"snapshot":false,"version":3,"instance":{"id":"` + f.instance + `","state":"STOPPED"}}}}`
	if typ, p := s.read(t); typ != "next" || string(p) != want {
		t.Fatalf("after the snapshot: %s %s, want %s", typ, p, want)
	}
}

// TestFanoutCatchUp: events queued for a member while it was behind go
// out together, each once and in order.
func TestFanoutCatchUp(t *testing.T) {
	t.Parallel()
	f := setupFanout(t, nil)
	const q = `subscription { instanceEvents(includeCurrent: true) { snapshot version instance { id stateReason } } }`
	subs := []liveSub{f.subscribe(t, f.w.member, q), f.subscribe(t, f.w.member, q)}
	const n = 40
	for i := range n {
		f.step(f.instance, "RUNNING", fmt.Sprintf("step %d", i))
	}
	f.relay() // all at once
	for _, s := range subs {
		for i := range n {
			typ, p := s.read(t)
			var got struct {
				Data struct {
					InstanceEvents struct {
						Version  int
						Instance struct{ StateReason string }
					}
				}
			}
			json.Unmarshal(p, &got)
			ev := got.Data.InstanceEvents
			if typ != "next" || ev.Version != i+2 || ev.Instance.StateReason != fmt.Sprintf("step %d", i) {
				t.Fatalf("event %d: %s %s", i, typ, p)
			}
		}
	}
}
