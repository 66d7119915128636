package graph

import (
	"net"
	"strings"
	"testing"
	"time"
)

// pipeConn is a websocket connection that writes its messages to a net.Conn.
type pipeConn struct {
	frameConn
	raw net.Conn
}

func (p pipeConn) WriteText(b []byte) error {
	_, err := p.raw.Write(b)
	return err
}

// TestWriteTimeout: a client that takes nothing off its connection is
// closed as a slow consumer once one write waits past WriteTimeout, and
// later writes fail at once; a client that reads is left alone.
func TestWriteTimeout(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*guardedConn, net.Conn, *[]string) {
		server, client := net.Pipe()
		t.Cleanup(func() { server.Close(); client.Close() })
		var reasons []string
		g := &guardedConn{frameConn: pipeConn{raw: server}, raw: server, maxUnread: 1 << 20, writeTimeout: 50 * time.Millisecond}
		g.slow = func(reason string) { reasons = append(reasons, reason) }
		return g, client, &reasons
	}
	t.Run("a client that does not read", func(t *testing.T) {
		t.Parallel()
		g, _, reasons := setup(t)
		if err := g.WriteJSON(map[string]string{"type": "next"}); err != errSlowConsumer {
			t.Fatalf("write = %v, want errSlowConsumer", err)
		}
		if len(*reasons) != 1 || !strings.Contains((*reasons)[0], "did not complete") {
			t.Fatalf("reasons = %q, want one about the write timeout", *reasons)
		}
	})
	t.Run("a client that reads", func(t *testing.T) {
		t.Parallel()
		g, client, reasons := setup(t)
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]byte, 64)
			client.Read(buf)
		}()
		if err := g.WriteJSON(map[string]string{"type": "next"}); err != nil {
			t.Fatalf("write = %v", err)
		}
		<-done
		if len(*reasons) != 0 {
			t.Fatalf("a reading client was called slow: %q", *reasons)
		}
	})
}
