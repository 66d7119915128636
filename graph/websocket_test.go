package graph_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
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
			if status := websocket.CloseStatus(err); status != 4403 {
				t.Fatalf("%q: closed with %v (%v), want 4403", auth, status, err)
			}
		}
	})
}
