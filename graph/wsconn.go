package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// coderConn is a websocket connection over coder/websocket as gqlgen's
// transport uses it, with what the live fan-out needs besides: it writes
// a message already encoded (a group's event, the same bytes for every
// member), and it notes the id of each operation the client starts, which
// gqlgen keeps to itself, so a member can write its frames under it.
type coderConn struct {
	conn *websocket.Conn

	// started is the id of the last subscribe (or start) message read.
	// Only the connection's reader touches it: gqlgen reads a message
	// and creates its operation in one goroutine (operationIDs).
	started string
	// pings, if set, keeps the connection alive (graphql-transport-ws).
	pings *pinger

	mu       sync.Mutex
	deadline *time.Timer
	closing  bool // the close handshake has begun
}

// acceptCoder upgrades r to a websocket speaking one of gqlgen's
// subprotocols.
func acceptCoder(w http.ResponseWriter, r *http.Request, accept websocket.AcceptOptions, opts transport.WebsocketAcceptOptions) (*coderConn, error) {
	for k, vs := range opts.ResponseHeader {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	accept.Subprotocols = slices.Clone(accept.Subprotocols)
	for _, p := range opts.Subprotocols {
		if !slices.Contains(accept.Subprotocols, p) {
			accept.Subprotocols = append(accept.Subprotocols, p)
		}
	}
	conn, err := websocket.Accept(w, r, &accept)
	if err != nil {
		return nil, err
	}
	return &coderConn{conn: conn}, nil
}

// NextReader reads the next message whole (within the read limit).
func (c *coderConn) NextReader() (int, io.Reader, error) {
	typ, data, err := c.conn.Read(context.Background())
	if err != nil {
		switch websocket.CloseStatus(err) {
		case websocket.StatusNormalClosure, websocket.StatusNoStatusRcvd:
			return int(typ), nil, transport.ErrWebsocketClosed
		}
		return int(typ), nil, err
	}
	var head struct{ Type, ID string }
	if json.Unmarshal(data, &head) == nil {
		switch {
		case head.Type == "subscribe" || head.Type == "start":
			c.started = head.ID
		case head.Type == "pong" && c.pings != nil:
			c.pings.pong()
		}
	}
	return int(typ), bytes.NewReader(data), nil
}

func (c *coderConn) WriteJSON(v any) error { return writeJSON(c, v) }

// writeJSON writes v encoded as one text message.
func writeJSON(w interface{ WriteText([]byte) error }, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.WriteText(b)
}

// WriteText writes b, already encoded, as one text message.
func (c *coderConn) WriteText(b []byte) error {
	return c.conn.Write(context.Background(), websocket.MessageText, b)
}

// WriteClose begins the close handshake; the connection closes when the
// client answers or coder/websocket gives up on it.
func (c *coderConn) WriteClose(code int, reason string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopDeadline()
	c.stopPings()
	if !c.closing {
		c.closing = true
		go c.conn.Close(websocket.StatusCode(code), reason)
	}
	return nil
}

// Close closes at once, unless a close handshake has begun: that one
// ends it, so the client still learns why.
func (c *coderConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopDeadline()
	c.stopPings()
	if c.closing {
		return nil
	}
	return c.conn.CloseNow()
}

func (c *coderConn) Subprotocol() string { return c.conn.Subprotocol() }

func (c *coderConn) SetReadLimit(limit int64) { c.conn.SetReadLimit(limit) }

// SetReadDeadline closes the connection at t, unless it is moved or
// cleared (a zero t) first: gqlgen's wait for a pong.
func (c *coderConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopDeadline()
	if t.IsZero() {
		return nil
	}
	c.deadline = time.AfterFunc(time.Until(t), func() { c.conn.CloseNow() })
	return nil
}

func (c *coderConn) stopDeadline() {
	if c.deadline != nil {
		c.deadline.Stop()
		c.deadline = nil
	}
}

func (c *coderConn) stopPings() {
	if c.pings != nil {
		c.pings.stop()
	}
}

// takeStarted returns, once, the id of the operation the client started
// last.
func (c *coderConn) takeStarted() (string, bool) {
	id := c.started
	c.started = ""
	return id, id != ""
}

// operationIDs gives each websocket operation the id its client started it
// under (operationID), as gqlgen creates it, right after reading its
// message.
type operationIDs struct{}

var (
	_ graphql.HandlerExtension          = operationIDs{}
	_ graphql.OperationParameterMutator = operationIDs{}
)

const operationIDKey = "bc.websocketOperationID"

func (operationIDs) ExtensionName() string                   { return "WebsocketOperationIDs" }
func (operationIDs) Validate(graphql.ExecutableSchema) error { return nil }

func (operationIDs) MutateOperationParameters(ctx context.Context, _ *graphql.RawParams) *gqlerror.Error {
	c := connFrom(ctx)
	if c == nil || c.ws == nil {
		return nil
	}
	if id, ok := c.ws.takeStarted(); ok {
		graphql.GetOperationContext(ctx).Stats.SetExtension(operationIDKey, id)
	}
	return nil
}

// operationID is the id ctx's websocket operation was started under.
func operationID(ctx context.Context) (string, bool) {
	if !graphql.HasOperationContext(ctx) {
		return "", false
	}
	id, ok := graphql.GetOperationContext(ctx).Stats.GetExtension(operationIDKey).(string)
	return id, ok
}
