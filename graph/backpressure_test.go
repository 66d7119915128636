package graph

import (
	"net"
	"strings"
	"sync/atomic"
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

// writeCounter counts the writes to a connection.
type writeCounter struct {
	net.Conn
	writes atomic.Int32
}

func (w *writeCounter) Write(b []byte) (int, error) {
	w.writes.Add(1)
	return w.Conn.Write(b)
}

// TestWriteTexts: messages written together reach the socket in one
// write, in order; one alone as before.
func TestWriteTexts(t *testing.T) {
	t.Parallel()
	server, client := net.Pipe()
	t.Cleanup(func() { server.Close(); client.Close() })
	socket := &writeCounter{Conn: server}
	cc := &countingConn{Conn: socket}
	g := &guardedConn{frameConn: pipeConn{raw: cc}, raw: cc, maxUnread: 1 << 20, writeTimeout: 5 * time.Second}
	g.slow = func(reason string) { t.Errorf("called slow: %s", reason) }
	read := make(chan string)
	go func() {
		defer close(read)
		var got []byte
		buf := make([]byte, 64)
		for len(got) < len("onetwothreefour") {
			n, err := client.Read(buf)
			if err != nil {
				return
			}
			got = append(got, buf[:n]...)
		}
		read <- string(got)
	}()
	if err := g.WriteTexts([][]byte{[]byte("one"), []byte("two"), []byte("three")}); err != nil {
		t.Fatal(err)
	}
	if err := g.WriteText([]byte("four")); err != nil {
		t.Fatal(err)
	}
	if got := <-read; got != "onetwothreefour" {
		t.Errorf("read %q", got)
	}
	if n := socket.writes.Load(); n != 2 {
		t.Errorf("%d writes to the socket for a batch of 3 and one message, want 2", n)
	}
	if n, _ := written(cc); n < int64(len("onetwothreefour")) {
		t.Errorf("counted %d bytes written, want at least %d", n, len("onetwothreefour"))
	}
}
