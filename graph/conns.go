package graph

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/sqlc"
)

// Websocket close codes beyond the protocol's own.
const (
	// closeUnauthorized ends a connection whose token is bad: refused at
	// connection_init, revoked or expired. graphql-ws's client gives up at
	// 4401 where it retries 4403 (Forbidden) for ever.
	closeUnauthorized    = 4401
	closeSlowConsumer    = 4008 // the client fell behind
	closeTooManyRequests = 4429 // over the connection limit
)

// wsConn is the state of one websocket connection.
type wsConn struct {
	ws        *guardedConn
	principal *iam.Principal
	subs      atomic.Int32
	closeOnce sync.Once
	// onSlow, if set, is told when the connection is closed as a slow
	// consumer: once per connection, however many ways it fell behind.
	onSlow func()
}

// close ends the connection with a code and a reason the client can read.
func (c *wsConn) close(code int, reason string) {
	c.closeOnce.Do(func() {
		if code == closeSlowConsumer && c.onSlow != nil {
			c.onSlow()
		}
		if c.ws != nil {
			c.ws.WriteClose(code, reason)
			c.ws.Close()
		}
	})
}

type connKey struct{}

func connFrom(ctx context.Context) *wsConn {
	c, _ := ctx.Value(connKey{}).(*wsConn)
	return c
}

// withConn gives a websocket upgrade request the state its connection
// will have.
func withConn(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), connKey{}, &wsConn{}))
}

// acceptor keeps each accepted connection in its state, so the server can
// close it with a reason of its own, and bounds its writes.
type acceptor struct {
	options      websocket.AcceptOptions
	maxUnread    int
	writeTimeout time.Duration
	pingInterval time.Duration
	onSlow       func()
}

func (a acceptor) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	hr := &hijackRecorder{ResponseWriter: w}
	conn, err := acceptCoder(hr, r, a.options, opts)
	if err != nil {
		return nil, err
	}
	c := connFrom(r.Context())
	if c == nil {
		c = &wsConn{}
	}
	g := &guardedConn{frameConn: conn, raw: hr.conn, maxUnread: a.maxUnread, writeTimeout: a.writeTimeout}
	g.slow = func(reason string) { c.close(closeSlowConsumer, reason) }
	c.ws, c.onSlow = g, a.onSlow
	if conn.Subprotocol() == "graphql-transport-ws" {
		// The protocol allows a ping at any time; gqlgen's own
		// (PingPongInterval) would cost a goroutine per connection.
		conn.pings = newPinger(a.pingInterval, g.WriteText, func() { conn.conn.CloseNow() })
		conn.pings.start()
	}
	return g, nil
}

// conns tracks live connections by principal: for the per-principal limit,
// and to end the connections of revoked tokens.
type conns struct {
	max int
	mu  sync.Mutex
	by  map[uuid.UUID]map[*wsConn]struct{}
}

var errTooManyConns = errors.New("too many connections for this principal")

func (cs *conns) add(c *wsConn) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.by == nil {
		cs.by = map[uuid.UUID]map[*wsConn]struct{}{}
	}
	id := c.principal.ID
	if len(cs.by[id]) >= cs.max {
		return errTooManyConns
	}
	if cs.by[id] == nil {
		cs.by[id] = map[*wsConn]struct{}{}
	}
	cs.by[id][c] = struct{}{}
	return nil
}

func (cs *conns) remove(c *wsConn) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c.principal == nil {
		return
	}
	delete(cs.by[c.principal.ID], c)
	if len(cs.by[c.principal.ID]) == 0 {
		delete(cs.by, c.principal.ID)
	}
}

// endRevoked closes, every interval, the connections whose token was
// revoked or expired since they authenticated.
func (cs *conns) endRevoked(ctx context.Context, q *sqlc.Queries, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cs.mu.Lock()
		byToken := map[uuid.UUID][]*wsConn{}
		for _, set := range cs.by {
			for c := range set {
				byToken[c.principal.TokenID] = append(byToken[c.principal.TokenID], c)
			}
		}
		cs.mu.Unlock()
		if len(byToken) == 0 {
			continue
		}
		tokens := make([]uuid.UUID, 0, len(byToken))
		for id := range byToken {
			tokens = append(tokens, id)
		}
		ended, err := q.EndedTokens(ctx, tokens)
		if err != nil {
			continue // checked again next time
		}
		for _, id := range ended {
			for _, c := range byToken[id] {
				c.close(closeUnauthorized, "token revoked or expired")
			}
		}
	}
}
