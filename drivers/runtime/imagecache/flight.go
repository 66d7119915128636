package imagecache

import "context"

// flight is one fetch, shared by the Gets waiting for it. It runs on a
// context of its own, cancelled when the last of them stops waiting, so one
// caller giving up does not fail the others.
type flight struct {
	done   chan struct{} // closed when the fetch has ended
	err    error         // the fetch's error; set before done is closed
	cancel context.CancelFunc
	// waiters is the number of Gets waiting; guarded by Cache.mu.
	waiters int
}

// share runs fetch for key unless a fetch for key is under way, and waits
// for that fetch to end. It returns the fetch's error, or ctx's when ctx is
// done first. The last waiter to leave cancels the fetch and waits for it
// to end, so that its temporary file is gone when share returns.
func (c *Cache) share(ctx context.Context, key string, fetch func(context.Context) error) error {
	c.mu.Lock()
	f := c.flights[key]
	if f == nil {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), cancel: cancel}
		c.flights[key] = f
		go c.run(fctx, key, f, fetch)
	}
	f.waiters++
	joined := c.joined
	c.mu.Unlock()
	if joined != nil {
		joined()
	}

	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	f.waiters--
	last := f.waiters == 0
	if last && c.flights[key] == f {
		// A Get arriving from now on starts a fetch of its own rather than
		// join this cancelled one.
		delete(c.flights, key)
	}
	c.mu.Unlock()
	if last {
		f.cancel()
		<-f.done
	}
	return ctx.Err()
}

// run runs fetch as flight f of key, and ends f.
func (c *Cache) run(ctx context.Context, key string, f *flight, fetch func(context.Context) error) {
	defer f.cancel()
	f.err = fetch(ctx)
	c.mu.Lock()
	if c.flights[key] == f {
		delete(c.flights, key)
	}
	c.mu.Unlock()
	close(f.done)
}
