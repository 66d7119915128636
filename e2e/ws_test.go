package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// wsClient is a graphql-transport-ws client of instanceEvents that keeps
// every event it receives and the latest version and state per instance.
type wsClient struct {
	t      testing.TB
	conn   *websocket.Conn
	mu     sync.Mutex
	events []event
	latest map[string]event
	closed chan struct{}
	err    error
	notify chan struct{}
}

type event struct {
	Type     string
	Version  int
	Snapshot bool
	Instance struct {
		ID, State, DesiredState string
		Tenant                  struct{ ID string }
		Version                 int
	}
}

const watchQuery = `subscription($f: InstanceEventFilter, $c: Boolean) { instanceEvents(filter: $f, includeCurrent: $c) {
	type version snapshot instance { id state desiredState version tenant { id } } } }`

// subscribe connects to url as token and subscribes with vars.
func subscribe(t testing.TB, url, token string, vars map[string]any) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	conn.SetReadLimit(1 << 20)
	c := &wsClient{t: t, conn: conn, latest: map[string]event{}, closed: make(chan struct{}), notify: make(chan struct{}, 1)}
	t.Cleanup(func() { conn.CloseNow() })
	wsjson.Write(ctx, conn, map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}})
	var ack map[string]any
	if err := wsjson.Read(ctx, conn, &ack); err != nil || ack["type"] != "connection_ack" {
		t.Fatalf("init: %v %v", ack, err)
	}
	wsjson.Write(ctx, conn, map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": watchQuery, "variables": vars}})
	go c.read()
	return c
}

func (c *wsClient) read() {
	defer close(c.closed)
	for {
		var msg struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := wsjson.Read(context.Background(), c.conn, &msg); err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		switch msg.Type {
		case "ping":
			wsjson.Write(context.Background(), c.conn, map[string]any{"type": "pong"})
		case "next":
			var p struct {
				Data struct {
					InstanceEvents event `json:"instanceEvents"`
				} `json:"data"`
				Errors []any `json:"errors"`
			}
			json.Unmarshal(msg.Payload, &p)
			ev := p.Data.InstanceEvents
			c.mu.Lock()
			c.events = append(c.events, ev)
			if ev.Version > c.latest[ev.Instance.ID].Version {
				c.latest[ev.Instance.ID] = ev
			}
			c.mu.Unlock()
			select {
			case c.notify <- struct{}{}:
			default:
			}
		}
	}
}

// view returns the client's latest state per instance.
func (c *wsClient) view() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for id, ev := range c.latest {
		out[id] = fmt.Sprintf("%s v%d", ev.Instance.State, ev.Version)
	}
	return out
}

// dbView returns the database's state of the tenant's instances.
func (cl *cluster) dbView(t testing.TB, includeDeleted bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	var after any
	for {
		data, errs := cl.gql(cl.member, `query($a: String) { instances(first: 100, after: $a) { pageInfo { hasNextPage endCursor } nodes { id state version } } }`, map[string]any{"a": after})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		conn := data["instances"].(map[string]any)
		for _, n := range conn["nodes"].([]any) {
			m := n.(map[string]any)
			if m["state"] == "DELETED" && !includeDeleted {
				continue
			}
			out[m["id"].(string)] = fmt.Sprintf("%s v%d", m["state"], int(m["version"].(float64)))
		}
		page := conn["pageInfo"].(map[string]any)
		if page["hasNextPage"] != true {
			return out
		}
		after = page["endCursor"]
	}
}

// converges waits until the client's view equals want().
func (c *wsClient) converges(t testing.TB, timeout time.Duration, want func() map[string]string) {
	t.Helper()
	deadline := time.After(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		got, w := c.view(), want()
		if equal(got, w) {
			return
		}
		select {
		case <-c.notify:
		case <-tick.C:
		case <-c.closed:
			t.Fatalf("subscription closed: %v", c.err)
		case <-deadline:
			t.Fatalf("client view differs from the database after %v:\nclient %v\ndb     %v", timeout, got, w)
		}
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// slowClient subscribes and then never reads, with a tiny receive buffer,
// so the server's writes to it soon block.
type slowClient struct {
	t    testing.TB
	conn *websocket.Conn
}

func dialSlow(t testing.TB, url, token string) *slowClient {
	t.Helper()
	dialer := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024) })
		return serr
	}}
	client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/graphql", &websocket.DialOptions{HTTPClient: client, Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	wsjson.Write(ctx, conn, map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}})
	var ack map[string]any
	if err := wsjson.Read(ctx, conn, &ack); err != nil || ack["type"] != "connection_ack" {
		t.Fatalf("init: %v %v", ack, err)
	}
	wsjson.Write(ctx, conn, map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": watchQuery}})
	return &slowClient{t: t, conn: conn}
}

// closedWithin reads what the server sent, at last, and reports whether it
// ends with the slow-consumer close.
func (s *slowClient) closedWithin(d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	s.conn.SetReadLimit(1 << 20)
	for {
		_, _, err := s.conn.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) && ce.Code == 4008 && strings.HasPrefix(ce.Reason, "slow consumer") {
				return true
			}
			s.t.Logf("slow client ended with %v", err)
			return false
		}
	}
}
