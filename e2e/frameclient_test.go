package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	be "encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// frameClient is a benchmark's websocket client (RFC 6455), reading frames
// off its socket itself. The clients share the two cores with the servers
// they time; coder/websocket's reader, with a lock and a context at every
// message, cost them about three times what a bare read of the socket
// does (BenchmarkLoopbackFloor), and that is CPU taken from the server.
// Each message is read into one buffer the client reuses. It speaks only
// what the servers here send: unmasked frames, fragmented or not, pings
// it answers, and no extensions.
type frameClient struct {
	conn net.Conn
	r    *bufio.Reader
	buf  []byte // the last message read

	wmu  sync.Mutex
	wbuf []byte
}

// dialWS opens a websocket at u (ws://host/path) over conn, a connection
// to its host, offering subprotocol if it is not empty. The websocket
// closes when ctx ends.
func dialWS(ctx context.Context, conn net.Conn, u, subprotocol string) (*frameClient, error) {
	target, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() { conn.Close() })
	c := &frameClient{conn: conn, r: bufio.NewReaderSize(conn, 4096)}
	if err := c.handshake(target, subprotocol); err != nil {
		conn.Close()
		return nil, fmt.Errorf("websocket handshake with %s: %w", u, err)
	}
	return c, nil
}

// dialWSURL dials u's host over TCP and opens the websocket on it.
func dialWSURL(ctx context.Context, u, subprotocol string) (*frameClient, error) {
	target, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", target.Host)
	if err != nil {
		return nil, err
	}
	return dialWS(ctx, conn, u, subprotocol)
}

// wsGUID is RFC 6455's key suffix for Sec-WebSocket-Accept.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

func (c *frameClient) handshake(u *url.URL, subprotocol string) error {
	var nonce [16]byte
	rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req, err := http.NewRequest(http.MethodGet, "http://"+u.Host+u.RequestURI(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Sec-WebSocket-Key", key)
	req.Header.Set("Sec-WebSocket-Version", "13")
	if subprotocol != "" {
		req.Header.Set("Sec-WebSocket-Protocol", subprotocol)
	}
	if err := req.Write(c.conn); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.r, req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return fmt.Errorf("%s", resp.Status)
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	if got := resp.Header.Get("Sec-WebSocket-Accept"); got != base64.StdEncoding.EncodeToString(sum[:]) {
		return fmt.Errorf("Sec-WebSocket-Accept %q does not answer the key", got)
	}
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != subprotocol {
		return fmt.Errorf("subprotocol %q, asked for %q", got, subprotocol)
	}
	return nil
}

// Opcodes of RFC 6455, section 5.2.
const (
	opContinuation = 0x0
	opText         = 0x1
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

// errWSClosed is read's error once the server has sent a close frame.
var errWSClosed = errors.New("websocket closed by the server")

// read returns the next data message, valid until the next read. It
// answers pings on the way.
func (c *frameClient) read() ([]byte, error) {
	c.buf = c.buf[:0]
	var control []byte
	started := false // the message's first frame has been read
	for {
		fin, op, n, err := c.header()
		if err != nil {
			return nil, err
		}
		if op >= opClose { // a control frame, between a message's fragments or not
			if control, err = readN(c.r, control[:0], n); err != nil {
				return nil, err
			}
			switch op {
			case opClose:
				return nil, errWSClosed
			case opPing:
				if err := c.write(opPong, control); err != nil {
					return nil, err
				}
			}
			continue
		}
		if started != (op == opContinuation) {
			return nil, fmt.Errorf("websocket: opcode %#x out of order", op)
		}
		started = true
		if c.buf, err = readN(c.r, c.buf, n); err != nil {
			return nil, err
		}
		if fin {
			return c.buf, nil
		}
	}
}

// header reads a frame's header: fin, the opcode and the payload's length.
func (c *frameClient) header() (fin bool, op byte, n uint64, err error) {
	var h [2]byte
	if _, err = io.ReadFull(c.r, h[:]); err != nil {
		return false, 0, 0, err
	}
	if h[0]&0x70 != 0 {
		return false, 0, 0, errors.New("websocket: reserved bits set (no extension was agreed)")
	}
	if h[1]&0x80 != 0 {
		return false, 0, 0, errors.New("websocket: a server's frame is masked")
	}
	fin, op, n = h[0]&0x80 != 0, h[0]&0x0f, uint64(h[1]&0x7f)
	switch n {
	case 126:
		var l [2]byte
		_, err = io.ReadFull(c.r, l[:])
		n = uint64(be.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		_, err = io.ReadFull(c.r, l[:])
		n = be.BigEndian.Uint64(l[:])
	}
	if err == nil && n > 1<<24 {
		err = fmt.Errorf("websocket: a frame of %d bytes", n)
	}
	return fin, op, n, err
}

// readN appends n bytes read from r to buf.
func readN(r io.Reader, buf []byte, n uint64) ([]byte, error) {
	start := len(buf)
	buf = slices.Grow(buf, int(n))[:start+int(n)] // no new array once the buffer is big enough
	_, err := io.ReadFull(r, buf[start:])
	return buf, err
}

// writeJSON writes v encoded as one text message.
func (c *frameClient) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.write(opText, b)
}

// write writes one frame, masked as a client's must be.
func (c *frameClient) write(op byte, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	b := append(c.wbuf[:0], 0x80|op)
	switch n := len(payload); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n <= 0xffff:
		b = be.BigEndian.AppendUint16(append(b, 0x80|126), uint16(n))
	default:
		b = be.BigEndian.AppendUint64(append(b, 0x80|127), uint64(n))
	}
	var mask [4]byte
	rand.Read(mask[:])
	b = append(b, mask[:]...)
	start := len(b)
	b = append(b, payload...)
	for i := range payload {
		b[start+i] ^= mask[i%4]
	}
	c.wbuf = b
	_, err := c.conn.Write(b)
	return err
}

// close closes the connection at once, without the close handshake.
func (c *frameClient) close() { c.conn.Close() }

// TestFrameClient holds the benchmarks' client to coder/websocket's server:
// the handshake with a subprotocol, messages of each length encoding,
// a message in fragments, a ping answered while reading, and its own
// masked messages read back by the server.
func TestFrameClient(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 70_000) // a 64-bit length
	pinged := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"graphql-transport-ws"}})
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		defer conn.CloseNow()
		ctx := r.Context()
		for _, m := range []string{"short", strings.Repeat("y", 300), long} {
			if err := conn.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
				t.Errorf("write: %v", err)
				return
			}
		}
		// A ping waits for its pong, which the client sends while it
		// reads the next message, written in three fragments after it.
		go func() { pinged <- conn.Ping(ctx) }()
		mw, err := conn.Writer(ctx, websocket.MessageText)
		if err != nil {
			t.Errorf("writer: %v", err)
			return
		}
		for _, part := range []string{"frag", "men", "ted"} {
			mw.Write([]byte(part))
		}
		mw.Close()
		// What the client writes comes back, unmasked by the server.
		_, echo, err := conn.Read(ctx)
		if err != nil {
			t.Errorf("read: %v", err)
			return
		}
		conn.Write(ctx, websocket.MessageText, echo)
		conn.Close(websocket.StatusNormalClosure, "")
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dialWSURL(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), "graphql-transport-ws")
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for _, want := range []string{"short", strings.Repeat("y", 300), long, "fragmented"} {
		got, err := c.read()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if string(got) != want {
			t.Fatalf("read %.40q (%d bytes), want %.40q (%d)", got, len(got), want, len(want))
		}
	}
	if err := c.writeJSON(map[string]string{"type": strings.Repeat("z", 200)}); err != nil {
		t.Fatal(err)
	}
	got, err := c.read()
	if err != nil {
		t.Fatalf("read the echo: %v", err)
	}
	if want := `{"type":"` + strings.Repeat("z", 200) + `"}`; string(got) != want {
		t.Fatalf("echo %.60q, want %.60q", got, want)
	}
	if err := <-pinged; err != nil {
		t.Fatalf("the server's ping: %v", err)
	}
	if _, err := c.read(); !errors.Is(err, errWSClosed) {
		t.Fatalf("after the close frame: %v, want errWSClosed", err)
	}
}
