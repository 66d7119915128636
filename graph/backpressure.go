package graph

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
)

// A websocket client that does not read what it is sent is closed with
// 4008, judged by what it does rather than by how much the kernels
// between us buffer: before each message, the bytes it has not yet taken
// off the socket are counted, and a client past MaxUnread is closed (the
// close frame queues behind what it has still to read, so it learns why);
// and a write that does not complete within WriteTimeout closes it too.
// The count is skipped while it cannot exceed MaxUnread: what a client has
// not read is at most what it had not read at the last count plus what was
// written to it since.

// errSlowConsumer is returned for writes to a client being closed as slow.
var errSlowConsumer = errors.New("slow consumer")

// guardedConn is a websocket connection whose writes are bounded.
type guardedConn struct {
	frameConn
	raw          net.Conn // the TCP connection under it, if known
	maxUnread    int
	writeTimeout time.Duration
	// slow closes the connection as a slow consumer; it is idempotent.
	slow func(reason string)

	// mu serializes writes: gqlgen's and the fan-out members' own.
	mu sync.Mutex
	// unread is what the last count found unread, when raw had written
	// countedAt bytes.
	unread    int
	countedAt int64
	counted   bool
}

// frameConn is the websocket under a guardedConn (coderConn).
type frameConn interface {
	transport.WebsocketConn
	// WriteText writes b, already encoded, as one text message.
	WriteText(b []byte) error
	// takeStarted returns, once, the id of the operation the client
	// started last.
	takeStarted() (string, bool)
}

func (g *guardedConn) WriteJSON(v any) error { return writeJSON(g, v) }

// WriteText writes b, already encoded, within the bounds.
func (g *guardedConn) WriteText(b []byte) error { return g.WriteTexts([][]byte{b}) }

// WriteTexts writes msgs, already encoded, within the bounds, and in one
// write to the socket where it can.
func (g *guardedConn) WriteTexts(msgs [][]byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.raw == nil {
		return g.writeEach(msgs)
	}
	if g.mayBeOver() {
		at, _ := written(g.raw)
		n, ok := unread(g.raw)
		if ok && n > g.maxUnread {
			g.slow(fmt.Sprintf("slow consumer: %d bytes sent and not read (at most %d)", n, g.maxUnread))
			return errSlowConsumer
		}
		g.unread, g.countedAt, g.counted = n, at, ok
	}
	g.raw.SetWriteDeadline(time.Now().Add(g.writeTimeout))
	err := g.writeAll(msgs)
	if isTimeout(err) {
		g.slow(fmt.Sprintf("slow consumer: a write did not complete in %v", g.writeTimeout))
		return errSlowConsumer
	}
	g.raw.SetWriteDeadline(time.Time{})
	return err
}

// writeAll writes msgs to the socket in one write, holding back what the
// websocket writes meanwhile.
func (g *guardedConn) writeAll(msgs [][]byte) error {
	c, ok := g.raw.(*countingConn)
	if !ok || len(msgs) == 1 {
		return g.writeEach(msgs)
	}
	c.hold()
	err := g.writeEach(msgs)
	return errors.Join(err, c.release())
}

func (g *guardedConn) writeEach(msgs [][]byte) error {
	for _, b := range msgs {
		if err := g.frameConn.WriteText(b); err != nil {
			return err
		}
	}
	return nil
}

// mayBeOver reports whether the client may hold more than MaxUnread unread
// bytes: always, unless a count was taken and what was written since could
// not take it past.
func (g *guardedConn) mayBeOver() bool {
	n, ok := written(g.raw)
	return !ok || !g.counted || int64(g.unread)+n-g.countedAt > int64(g.maxUnread)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// SetReadLimit and SetReadDeadline pass on what gqlgen asks of the
// connection underneath.
func (g *guardedConn) SetReadLimit(limit int64) {
	if l, ok := g.frameConn.(transport.WebsocketReadLimiter); ok {
		l.SetReadLimit(limit)
	}
}

func (g *guardedConn) SetReadDeadline(t time.Time) error {
	if d, ok := g.frameConn.(transport.WebsocketReadDeadliner); ok {
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
	if err != nil {
		return conn, rw, err
	}
	cc := &countingConn{Conn: conn}
	rw.Writer.Reset(cc) // empty: net/http makes it at the hijack
	h.conn = cc
	return cc, rw, nil
}

// countingConn counts what is written to a connection, for guardedConn's
// bound on what its client has not read, and can hold writes back to send
// them in one.
type countingConn struct {
	net.Conn
	n atomic.Int64

	// mu orders the writes to the socket; while holding, they gather in
	// held.
	mu      sync.Mutex
	holding bool
	held    *[]byte
}

// heldBuffers are countingConn's, while it holds writes back.
var heldBuffers = sync.Pool{New: func() any { return new([]byte) }}

// recordSlack bounds what TLS adds to every 16 KiB written (a record's
// header, type and tag), so the count bounds the bytes on the socket too.
const recordSlack = 64

func (c *countingConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holding {
		*c.held = append(*c.held, b...)
		c.count(len(b))
		return len(b), nil
	}
	n, err := c.Conn.Write(b)
	c.count(n)
	return n, err
}

func (c *countingConn) count(n int) {
	c.n.Add(int64(n) + recordSlack*int64(1+n/16384))
}

// hold holds the writes back until release.
func (c *countingConn) hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holding, c.held = true, heldBuffers.Get().(*[]byte)
}

// release writes what was held back, in one write.
func (c *countingConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	if len(*c.held) > 0 {
		_, err = c.Conn.Write(*c.held)
	}
	*c.held = (*c.held)[:0]
	heldBuffers.Put(c.held)
	c.holding, c.held = false, nil
	return err
}

// NetConn is the connection under c, for unread.
func (c *countingConn) NetConn() net.Conn { return c.Conn }

// written is how many bytes conn has written, if it counts them.
func written(conn net.Conn) (int64, bool) {
	c, ok := conn.(*countingConn)
	if !ok {
		return 0, false
	}
	return c.n.Load(), true
}

func (h *hijackRecorder) Unwrap() http.ResponseWriter { return h.ResponseWriter }
