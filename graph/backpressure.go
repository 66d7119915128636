package graph

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
)

// A websocket client that does not read what it is sent is closed with
// 4008, judged by what it does rather than by how much the kernels
// between us buffer: before each message, the bytes it has not yet taken
// off the socket are counted, and a client past MaxUnread is closed (the
// close frame queues behind what it has still to read, so it learns why);
// and a write that does not complete within WriteTimeout closes it too.

// errSlowConsumer is returned for writes to a client being closed as slow.
var errSlowConsumer = errors.New("slow consumer")

// guardedConn is a websocket connection whose writes are bounded.
type guardedConn struct {
	transport.WebsocketConn
	raw          net.Conn // the TCP connection under it, if known
	maxUnread    int
	writeTimeout time.Duration
	// slow closes the connection as a slow consumer; it is idempotent.
	slow func(reason string)
}

func (g *guardedConn) WriteJSON(v any) error {
	if g.raw == nil {
		return g.WebsocketConn.WriteJSON(v)
	}
	if n, ok := unread(g.raw); ok && n > g.maxUnread {
		g.slow(fmt.Sprintf("slow consumer: %d bytes sent and not read (at most %d)", n, g.maxUnread))
		return errSlowConsumer
	}
	g.raw.SetWriteDeadline(time.Now().Add(g.writeTimeout))
	err := g.WebsocketConn.WriteJSON(v)
	if isTimeout(err) {
		g.slow(fmt.Sprintf("slow consumer: a write did not complete in %v", g.writeTimeout))
		return errSlowConsumer
	}
	g.raw.SetWriteDeadline(time.Time{})
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// SetReadLimit and SetReadDeadline pass on what gqlgen asks of the
// connection underneath.
func (g *guardedConn) SetReadLimit(limit int64) {
	if l, ok := g.WebsocketConn.(transport.WebsocketReadLimiter); ok {
		l.SetReadLimit(limit)
	}
}

func (g *guardedConn) SetReadDeadline(t time.Time) error {
	if d, ok := g.WebsocketConn.(transport.WebsocketReadDeadliner); ok {
		return d.SetReadDeadline(t)
	}
	return nil
}

// hijackRecorder keeps the connection a websocket upgrade takes over.
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	h.conn = conn
	return conn, rw, err
}

func (h *hijackRecorder) Unwrap() http.ResponseWriter { return h.ResponseWriter }
