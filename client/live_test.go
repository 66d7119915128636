package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestLiveAnswersPings: the server's keep-alive pings are answered by the
// client's websocket itself (genqlient would take one for a message of an
// unknown subscription and stop), and a refused token's close (4401)
// comes back as UNAUTHENTICATED.
func TestLiveAnswersPings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		accept bool
		code   string
	}{
		{"a ping before the ack", true, ""},
		{"a token refused", false, "UNAUTHENTICATED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ponged := make(chan bool, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"graphql-transport-ws"}})
				if err != nil {
					return
				}
				defer conn.CloseNow()
				ctx := r.Context()
				var init struct {
					Type    string
					Payload map[string]string
				}
				if _, data, err := conn.Read(ctx); err != nil || json.Unmarshal(data, &init) != nil || init.Payload["Authorization"] != "Bearer bct_t" {
					t.Errorf("connection_init: %+v %v", init, err)
					return
				}
				if !tc.accept {
					conn.Close(4401, "unauthenticated")
					return
				}
				conn.Write(ctx, websocket.MessageText, []byte(`{"type":"ping"}`))
				_, data, err := conn.Read(ctx)
				ponged <- err == nil && string(data) == `{"type":"pong"}`
				conn.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_ack"}`))
				conn.Read(ctx) // until the client closes
			}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ws, _, err := New(srv.URL, "bct_t", nil).Live(ctx)
			if tc.accept {
				if err != nil {
					t.Fatal(err)
				}
				ws.Close()
				if !<-ponged {
					t.Fatal("the ping was not answered with a pong")
				}
				return
			}
			var apiErr *Error
			if !errors.As(err, &apiErr) || apiErr.Code != tc.code {
				t.Fatalf("%v, want %s", err, tc.code)
			}
		})
	}
}
