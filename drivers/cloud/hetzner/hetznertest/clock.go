package hetznertest

import (
	"sync"
	"time"
)

// Clock is a manual clock for Config.Now: it stands still until Advance,
// so a test sees every intermediate state of an action for as long as it
// looks, however slowly it runs. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock standing at the current time.
func NewClock() *Clock {
	return &Clock{now: time.Now()}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
