package graph

import (
	"sync"
	"time"
)

// pinger keeps a graphql-transport-ws connection alive as gqlgen's
// PingPongInterval does, on a timer instead of a goroutine per connection
// (10,000 of serve's goroutines at 10,000 subscribers): every interval it
// sends a ping, and a client that leaves two pings unanswered is closed at
// the next.
type pinger struct {
	interval time.Duration
	write    func([]byte) error
	closeNow func()

	mu         sync.Mutex
	t          *time.Timer // nil once stopped
	unanswered int
}

var pingMessage = []byte(`{"type":"ping"}`)

// newPinger returns a pinger writing with write and closing with closeNow;
// it pings once started.
func newPinger(interval time.Duration, write func([]byte) error, closeNow func()) *pinger {
	return &pinger{interval: interval, write: write, closeNow: closeNow}
}

// start pings every interval until stop.
func (p *pinger) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.t == nil {
		p.t = time.AfterFunc(p.interval, p.tick)
	}
}

func (p *pinger) tick() {
	p.mu.Lock()
	if p.t == nil {
		p.mu.Unlock()
		return
	}
	if p.unanswered >= 2 {
		p.t = nil
		p.mu.Unlock()
		p.closeNow()
		return
	}
	p.unanswered++
	p.mu.Unlock()
	if err := p.write(pingMessage); err != nil {
		p.stop()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.t != nil {
		p.t.Reset(p.interval)
	}
}

// pong notes the client's answer.
func (p *pinger) pong() {
	p.mu.Lock()
	p.unanswered = 0
	p.mu.Unlock()
}

// stop ends the pings; the connection is closing.
func (p *pinger) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.t != nil {
		p.t.Stop()
		p.t = nil
	}
}
