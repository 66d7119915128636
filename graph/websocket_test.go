package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/better-compute/vps/graph"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/live"
)

// dialWS opens a graphql-transport-ws connection and sends connection_init
// with authorization.
func (e *env) dialWS(t *testing.T, authorization string) (*websocket.Conn, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.url, "http"), &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	if err := wsjson.Write(ctx, conn, map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": authorization}}); err != nil {
		t.Fatal(err)
	}
	return conn, ctx
}

func TestWebsocketAuthentication(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")

	t.Run("a member's bearer token in connection_init", func(t *testing.T) {
		conn, ctx := e.dialWS(t, "Bearer "+w.member)
		var msg struct {
			Type    string
			ID      string
			Payload json.RawMessage
		}
		if err := wsjson.Read(ctx, conn, &msg); err != nil || msg.Type != "connection_ack" {
			t.Fatalf("after init: %+v, %v", msg, err)
		}
		wsjson.Write(ctx, conn, map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": "{ viewer { tenant { id } } }"}})
		if err := wsjson.Read(ctx, conn, &msg); err != nil || msg.Type != "next" {
			t.Fatalf("after subscribe: %+v, %v", msg, err)
		}
		if !strings.Contains(string(msg.Payload), w.tenant) {
			t.Fatalf("payload = %s", msg.Payload)
		}
	})
	t.Run("the legacy graphql-ws protocol too", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.url, "http"), &websocket.DialOptions{Subprotocols: []string{"graphql-ws"}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.CloseNow()
		wsjson.Write(ctx, conn, map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + w.member}})
		wsjson.Write(ctx, conn, map[string]any{"id": "1", "type": "start", "payload": map[string]any{"query": "{ viewer { tenant { id } } }"}})
		for {
			var msg struct {
				Type    string
				Payload json.RawMessage
			}
			if err := wsjson.Read(ctx, conn, &msg); err != nil {
				t.Fatal(err)
			}
			if msg.Type == "data" {
				if !strings.Contains(string(msg.Payload), w.tenant) {
					t.Fatalf("payload = %s", msg.Payload)
				}
				return
			}
		}
	})
	t.Run("a bad token closes the connection", func(t *testing.T) {
		for _, auth := range []string{"Bearer bct_nope", ""} {
			conn, ctx := e.dialWS(t, auth)
			var msg map[string]any
			err := wsjson.Read(ctx, conn, &msg)
			if err == nil && msg["type"] == "connection_ack" {
				t.Fatalf("%q: acknowledged", auth)
			}
			for err == nil {
				err = wsjson.Read(ctx, conn, &msg)
			}
			// 4401: graphql-ws's client does not retry it (4403 it does).
			if status := websocket.CloseStatus(err); status != 4401 {
				t.Fatalf("%q: closed with %v (%v), want 4401", auth, status, err)
			}
		}
	})
}

func TestWebsocketLimits(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	e := setupWith(t, func(c *graph.HandlerConfig) {
		c.Live = live.New(live.Config{Redis: rdb, Prefix: prefix})
		c.MaxConnections, c.MaxSubscriptions = 2, 2
	})
	w := e.world("alpha")
	// sub subscribes; it reads nothing, as a read that times out would
	// close the connection.
	sub := func(conn *websocket.Conn, ctx context.Context, id string) {
		wsjson.Write(ctx, conn, map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": "subscription { instanceEvents { version } }"}})
	}
	ack := func(conn *websocket.Conn, ctx context.Context) {
		var msg map[string]any
		if err := wsjson.Read(ctx, conn, &msg); err != nil || msg["type"] != "connection_ack" {
			t.Fatalf("init: %v %v", msg, err)
		}
	}

	t.Run("subscriptions per connection", func(t *testing.T) {
		conn, ctx := e.dialWS(t, "Bearer "+w.member)
		ack(conn, ctx)
		sub(conn, ctx, "1")
		sub(conn, ctx, "2")
		sub(conn, ctx, "3")
		// Subscriptions start concurrently: whichever came third is refused.
		var msg map[string]any
		if err := wsjson.Read(ctx, conn, &msg); err != nil || !strings.Contains(fmt.Sprint(msg["payload"]), "RATE_LIMITED") {
			t.Fatalf("third subscription: %v, %v", msg, err)
		}
	})
	t.Run("connections per principal", func(t *testing.T) {
		for range 2 {
			conn, ctx := e.dialWS(t, "Bearer "+e.operator)
			ack(conn, ctx)
		}
		conn, ctx := e.dialWS(t, "Bearer "+e.operator)
		var msg map[string]any
		err := wsjson.Read(ctx, conn, &msg)
		for err == nil {
			err = wsjson.Read(ctx, conn, &msg)
		}
		if websocket.CloseStatus(err) != 4429 {
			t.Fatalf("third connection closed with %v", err)
		}
	})
	t.Run("a revoked token ends its subscriptions", func(t *testing.T) {
		var out struct {
			CreateApiToken struct {
				Token    string
				ApiToken struct{ ID string }
			}
		}
		e.must(e.operator, `mutation($t: ID) { createApiToken(input: {name: "watcher", tenantId: $t}) { token apiToken { id } } }`, map[string]any{"t": w.tenant}, &out)
		conn, ctx := e.dialWS(t, "Bearer "+out.CreateApiToken.Token)
		ack(conn, ctx)
		sub(conn, ctx, "1")
		e.must(e.operator, `mutation($id: ID!) { revokeApiToken(input: {id: $id}) { apiToken { id } } }`, map[string]any{"id": out.CreateApiToken.ApiToken.ID}, nil)
		var msg map[string]any
		err := wsjson.Read(ctx, conn, &msg)
		for err == nil {
			err = wsjson.Read(ctx, conn, &msg)
		}
		if websocket.CloseStatus(err) != 4401 {
			t.Fatalf("closed with %v, want 4401", err)
		}
	})
	t.Run("another origin is refused", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.url, "http"), &websocket.DialOptions{
			Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-origin dial: %v (%v)", err, resp)
		}
	})
}

// TestConnectionAckCarriesNothing: connection_ack does not echo the
// connection_init payload (the bearer token) on either protocol.
func TestConnectionAckCarriesNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, protocol := range []string{"graphql-transport-ws", "graphql-ws"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.url, "http"), &websocket.DialOptions{Subprotocols: []string{protocol}})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.CloseNow()
			wsjson.Write(ctx, conn, map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + e.operator}})
			var msg struct {
				Type    string
				Payload json.RawMessage
			}
			if err := wsjson.Read(ctx, conn, &msg); err != nil || msg.Type != "connection_ack" {
				t.Fatalf("after init: %+v, %v", msg, err)
			}
			if len(msg.Payload) > 0 && string(msg.Payload) != "null" && string(msg.Payload) != "{}" {
				t.Fatalf("connection_ack payload = %s", msg.Payload)
			}
		})
	}
}

// TestTokenExpiryClosesWebsocket: a websocket is closed with 4401 when its
// token expires, as docs/api.md says.
func TestTokenExpiryClosesWebsocket(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var out struct{ CreateApiToken struct{ Token string } }
	e.must(e.operator, `mutation($at: DateTime) { createApiToken(input: {name: "brief", expiresAt: $at}) { token } }`,
		map[string]any{"at": time.Now().Add(2 * time.Second).Format(time.RFC3339Nano)}, &out)
	conn, ctx := e.dialWS(t, "Bearer "+out.CreateApiToken.Token)
	var msg map[string]any
	if err := wsjson.Read(ctx, conn, &msg); err != nil || msg["type"] != "connection_ack" {
		t.Fatalf("init: %v %v", msg, err)
	}
	err := wsjson.Read(ctx, conn, &msg)
	for err == nil {
		err = wsjson.Read(ctx, conn, &msg)
	}
	if status := websocket.CloseStatus(err); status != 4401 {
		t.Fatalf("closed with %v (%v), want 4401", status, err)
	}
}

// TestPings: the server pings a graphql-transport-ws client every
// interval; a client that answers stays connected, one that leaves two
// pings unanswered is closed at the next.
func TestPings(t *testing.T) {
	t.Parallel()
	e := setupWith(t, func(c *graph.HandlerConfig) { c.PingInterval = 20 * time.Millisecond })
	// pings reads until the connection ends or want pings came,
	// answering them if answer; it returns how many came and why it
	// stopped.
	pings := func(answer bool, want int) (int, error) {
		conn, ctx := e.dialWS(t, "Bearer "+e.operator)
		n := 0
		for n < want {
			var msg map[string]any
			if err := wsjson.Read(ctx, conn, &msg); err != nil {
				return n, err
			}
			if msg["type"] == "ping" {
				n++
				if answer {
					if err := wsjson.Write(ctx, conn, map[string]any{"type": "pong"}); err != nil {
						return n, err
					}
				}
			}
		}
		return n, nil
	}
	if n, err := pings(true, 10); err != nil {
		t.Errorf("answering client: closed after %d pings: %v", n, err)
	}
	if n, err := pings(false, 10); err == nil || n != 2 {
		t.Errorf("silent client: %d pings, then %v; want 2, then the connection closed", n, err)
	}
}
