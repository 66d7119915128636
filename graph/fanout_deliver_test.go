package graph

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"
)

// TestMemberDeliver: the group writes an event to a live member's
// websocket itself, with no response loop running; it queues the event
// instead while the connection is being written, while an event queued
// before it is not yet written (so they stay in order), and during a
// snapshot.
func TestMemberDeliver(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server := <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	defer server.Close()
	raw := &countingConn{Conn: server}
	conn := &guardedConn{frameConn: pipeConn{raw: raw}, raw: raw, maxUnread: 1 << 20, writeTimeout: 10 * time.Second}
	conn.slow = func(reason string) { t.Errorf("closed as slow: %s", reason) }
	m := &member{
		q: make(chan *shared, 4), seen: map[uuid.UUID]int64{}, live: true,
		frames:  &frames{conn: conn, tail: []byte(`,"id":"1","type":"next"}`)},
		written: func(*graphql.Response, time.Time) {},
	}
	id := uuid.New()
	event := func(version int64) *shared {
		return &shared{id: id, version: version, payload: []byte(`{"v":` + string(rune('0'+version)) + `}`)}
	}
	read := func(want string) {
		t.Helper()
		client.SetReadDeadline(time.Now().Add(5 * time.Second))
		got := make([]byte, len(want))
		if _, err := io.ReadFull(client, got); err != nil || string(got) != want {
			t.Fatalf("client read %q, %v; want %q", got, err, want)
		}
	}
	queued := func(n int) {
		t.Helper()
		if m.pending != n || len(m.q) != n {
			t.Fatalf("pending %d, queued %d; want %d", m.pending, len(m.q), n)
		}
	}

	if !m.deliver(event(1)) {
		t.Fatal("not delivered")
	}
	queued(0)
	read(`{"payload":{"v":1},"id":"1","type":"next"}`)

	conn.mu.Lock() // another operation's write under way
	m.deliver(event(2))
	conn.mu.Unlock()
	queued(1)
	m.deliver(event(3)) // the connection is free, but 2 is not written yet
	queued(2)
	for range 2 { // the response loop's turn
		if _, err := m.write(<-m.q); err != nil {
			t.Fatal(err)
		}
		m.pending--
	}
	read(`{"payload":{"v":2},"id":"1","type":"next"}{"payload":{"v":3},"id":"1","type":"next"}`)

	m.live = false // a snapshot under way
	m.deliver(event(4))
	queued(1)
}
