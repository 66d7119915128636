package xid

import (
	"sync"

	"github.com/better-compute/vps/hostproto"
)

// DefaultMax bounds what a Collector holds.
const DefaultMax = 1024

// Collector holds the Xid events a runtime read until the daemon takes
// them. It keeps at most max, dropping the oldest, so a storm of events
// the daemon cannot send costs bounded memory. It is safe for concurrent
// use.
type Collector struct {
	max int
	// notify is called, without the lock, after each event added.
	notify func()

	mu     sync.Mutex
	events []hostproto.Xid
}

// NewCollector returns a Collector of at most max events (DefaultMax when
// not positive) that calls notify, if not nil, after each event it adds.
func NewCollector(max int, notify func()) *Collector {
	if max <= 0 {
		max = DefaultMax
	}
	return &Collector{max: max, notify: notify}
}

// Add holds x.
func (c *Collector) Add(x hostproto.Xid) {
	c.mu.Lock()
	c.events = append(c.events, x)
	if over := len(c.events) - c.max; over > 0 {
		c.events = append(c.events[:0:0], c.events[over:]...)
	}
	c.mu.Unlock()
	if c.notify != nil {
		c.notify()
	}
}

// Take returns the events held, oldest first, and forgets them.
func (c *Collector) Take() []hostproto.Xid {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.events
	c.events = nil
	return out
}
