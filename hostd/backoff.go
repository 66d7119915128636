package hostd

import (
	"context"
	"time"
)

// The waits between retries of a failing gateway: from minBackoff, doubling,
// up to maxBackoff.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// backoff is a capped exponential backoff. The zero backoff is ready.
type backoff struct {
	last time.Duration
}

// next returns how long to wait before the next retry.
func (b *backoff) next() time.Duration {
	if b.last == 0 {
		b.last = minBackoff
	} else {
		b.last = min(2*b.last, maxBackoff)
	}
	return b.last
}

// reset starts over from minBackoff, after a success.
func (b *backoff) reset() {
	b.last = 0
}

// sleep waits for d, or less if ctx ends first. It reports whether ctx is
// still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
