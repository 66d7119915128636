package imagecache

// SetJoinHook makes c call joined each time a Get starts to wait for a
// fetch, so that tests can tell when callers share one.
func SetJoinHook(c *Cache, joined func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.joined = joined
}
