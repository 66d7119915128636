package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/Khan/genqlient/graphql"
	"github.com/coder/websocket"
)

// Live returns a websocket for subscriptions (graphql-transport-ws),
// authenticated with the client's token and open; the generated
// subscription functions take it. Errors of the connection itself arrive
// on the channel, at most one. Close it when done, reading the
// subscriptions' channels until they close: Close waits for the reader
// that feeds them.
func (c *Client) Live(ctx context.Context) (graphql.WebSocketClient, <-chan error, error) {
	l := &live{url: wsURL(c.endpoint), token: c.token, http: c.http}
	errs, err := l.Start(ctx)
	if err != nil {
		return nil, nil, err
	}
	return l, errs, nil
}

// wsURL is the websocket URL of an http(s) endpoint.
func wsURL(endpoint string) string {
	if rest, ok := strings.CutPrefix(endpoint, "http"); ok {
		return "ws" + rest
	}
	return endpoint
}

// live is one graphql-transport-ws connection, a graphql.WebSocketClient
// written for this API in place of genqlient's own: it answers the
// server's keep-alive pings, reports a close by its code (4401: the token
// refused), and nothing it starts outlives Close.
type live struct {
	url, token string
	http       *http.Client

	conn *websocket.Conn
	errs chan error    // the connection's error, at most one
	done chan struct{} // closed when the reader has ended

	mu      sync.Mutex
	subs    map[string]subscription
	next    int
	closing bool
}

// subscription is where a subscription's messages go. Only the reader
// closes its channel: when the server ends it or the connection ends.
type subscription struct {
	ch      interface{}
	forward graphql.ForwardDataFunction
	// stopped: unsubscribed; its messages are dropped until its end.
	stopped bool
}

// message is a graphql-transport-ws message.
type message struct {
	Type    string          `json:"type"`
	ID      string          `json:"id,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Start connects, authenticates and waits for the server's
// acknowledgement; a refused token is an *Error of code UNAUTHENTICATED.
func (l *live) Start(ctx context.Context) (chan error, error) {
	conn, _, err := websocket.Dial(ctx, l.url, &websocket.DialOptions{
		HTTPClient: l.http, Subprotocols: []string{"graphql-transport-ws"},
	})
	if err != nil {
		return nil, fmt.Errorf("open the API's websocket %s: %w", l.url, err)
	}
	conn.SetReadLimit(1 << 20)
	l.conn, l.errs, l.done, l.subs = conn, make(chan error, 1), make(chan struct{}), map[string]subscription{}
	init, _ := json.Marshal(map[string]string{"Authorization": "Bearer " + l.token})
	if err := l.send(ctx, message{Type: "connection_init", Payload: init}); err != nil {
		conn.CloseNow()
		return nil, err
	}
	for {
		msg, err := l.read(ctx)
		if err != nil {
			conn.CloseNow()
			return nil, err
		}
		if msg.Type == "connection_ack" {
			break
		}
	}
	go l.serve()
	return l.errs, nil
}

// read reads the next message other than a ping, answering pings.
func (l *live) read(ctx context.Context) (message, error) {
	for {
		_, data, err := l.conn.Read(ctx)
		if err != nil {
			return message{}, closeError(err)
		}
		var msg message
		if err := json.Unmarshal(data, &msg); err != nil {
			return message{}, fmt.Errorf("a message from the API that is not JSON: %w", err)
		}
		if msg.Type != "ping" {
			return msg, nil
		}
		if err := l.send(ctx, message{Type: "pong"}); err != nil {
			return message{}, err
		}
	}
}

func (l *live) send(ctx context.Context, msg message) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return l.conn.Write(ctx, websocket.MessageText, b)
}

// serve hands each subscription its messages until the connection ends,
// then closes every subscription's channel.
func (l *live) serve() {
	defer close(l.done)
	defer l.endAll()
	for {
		msg, err := l.read(context.Background())
		if err != nil {
			l.mu.Lock()
			closing := l.closing
			l.mu.Unlock()
			if !closing {
				l.errs <- err // buffered: the only send
			}
			return
		}
		l.mu.Lock()
		sub, ok := l.subs[msg.ID]
		if ok && msg.Type != "next" {
			delete(l.subs, msg.ID) // it ends here
		}
		l.mu.Unlock()
		if !ok || sub.stopped && msg.Type == "next" {
			continue // unknown, or unsubscribed
		}
		switch {
		case sub.stopped:
		case msg.Type == "next":
			err = sub.forward(sub.ch, msg.Payload)
		case msg.Type == "error": // the payload is the operation's errors
			err = sub.forward(sub.ch, json.RawMessage(`{"errors":`+string(msg.Payload)+`}`))
		}
		if msg.Type != "next" {
			closeChan(sub.ch)
		}
		if err != nil {
			l.errs <- fmt.Errorf("a subscription's message: %w", err)
			return
		}
	}
}

// endAll closes the channels of the subscriptions still open.
func (l *live) endAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, sub := range l.subs {
		delete(l.subs, id)
		closeChan(sub.ch)
	}
}

// Subscribe starts the subscription req; its messages go to ch through
// forward.
func (l *live) Subscribe(req *graphql.Request, ch interface{}, forward graphql.ForwardDataFunction) (string, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	l.next++
	id := strconv.Itoa(l.next)
	l.subs[id] = subscription{ch: ch, forward: forward}
	l.mu.Unlock()
	if err := l.send(context.Background(), message{Type: "subscribe", ID: id, Payload: payload}); err != nil {
		l.mu.Lock()
		delete(l.subs, id)
		l.mu.Unlock()
		return "", err
	}
	return id, nil
}

// Unsubscribe stops subscription id; its channel closes with the
// connection.
func (l *live) Unsubscribe(id string) error {
	l.mu.Lock()
	sub, ok := l.subs[id]
	sub.stopped = true
	if ok {
		l.subs[id] = sub
	}
	l.mu.Unlock()
	if !ok {
		return fmt.Errorf("no subscription %q", id)
	}
	return l.send(context.Background(), message{Type: "complete", ID: id})
}

// Close ends the connection and waits for its reader, which may be handing
// a subscription its last message: read the subscriptions' channels until
// they close.
func (l *live) Close() error {
	l.mu.Lock()
	if l.conn == nil || l.closing {
		l.mu.Unlock()
		return nil
	}
	l.closing = true
	l.mu.Unlock()
	l.conn.Close(websocket.StatusNormalClosure, "")
	<-l.done
	close(l.errs)
	return nil
}

// CloseDraining closes ws, taking what its reader may still hand events
// (a subscription's channel) until the channel closes: Close waits for the
// reader.
func CloseDraining[T any](ws graphql.WebSocketClient, events <-chan T) {
	drained := make(chan struct{})
	go func() {
		for range events {
		}
		close(drained)
	}()
	ws.Close()
	<-drained
}

// closeError is how the server closed the websocket, as an *Error where
// its code says why: 4401 a token refused, 4429 too many connections, 4008
// a client that fell behind.
func closeError(err error) error {
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		return err
	}
	switch ce.Code {
	case 4401:
		return &Error{Code: "UNAUTHENTICATED", Message: "the API refused the token: " + ce.Reason}
	case 4429:
		return &Error{Code: "RATE_LIMITED", Message: "too many connections: " + ce.Reason}
	case 4008:
		return &Error{Code: "RATE_LIMITED", Message: "the subscription fell behind and was closed: " + ce.Reason}
	}
	return err
}

// closeChan closes a subscription's channel, of whichever type the
// generated function made it.
func closeChan(ch interface{}) { reflect.ValueOf(ch).Close() }
