package gateway

// FailHandler makes the report handler of that name fail after it ran,
// its writes made, so a test sees them rolled back alone.
func FailHandler(name string) func(*Config) {
	return func(c *Config) { c.failHandler = name }
}
