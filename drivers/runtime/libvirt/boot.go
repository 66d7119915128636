package libvirt

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"
)

// A guest has booted, for Booted, when its serial console (the file the
// driver gives its <serial>) shows a line of BootedPattern: nothing runs in
// the guest for the platform, but guests say on their console when they are
// up. Cloud-init's final message says it on cloud images; the project's
// test guest prints "bc-guest: ready"; a getty's login prompt says it on
// others. A guest that says none of these counts as booted BootTimeout
// after it was started, so a warm instance is paused in the end.

// DefaultBootedPattern is Config.BootedPattern's default.
const DefaultBootedPattern = `(?m)^bc-guest: ready|Cloud-init v\. \S+ finished at|^\S+ login: `

// DefaultBootTimeout is Config.BootTimeout's default.
const DefaultBootTimeout = 2 * time.Minute

// maxConsoleRead bounds how much of a console log Booted reads.
const maxConsoleRead = 4 << 20

// Booted implements hostd.Runtime: the domain runs, and its console shows
// it has booted or it has run for BootTimeout.
func (r *Runtime) Booted(ctx context.Context, id string) (bool, error) {
	if _, err := r.must(id); err != nil {
		return false, err
	}
	if r.runningFor(id) >= r.cfg.BootTimeout {
		return true, nil
	}
	f, err := os.Open(r.console(id))
	if os.IsNotExist(err) {
		return false, nil // not started yet
	}
	if err != nil {
		return false, fmt.Errorf("booted %s: %w", id, err)
	}
	defer f.Close()
	console, err := io.ReadAll(io.LimitReader(f, maxConsoleRead))
	if err != nil {
		return false, fmt.Errorf("booted %s: read console: %w", id, err)
	}
	return r.booted.Match(console), nil
}

// runningFor is how long this Runtime has known domain id to run: since its
// Start, or since it was first asked after a restart of the daemon.
func (r *Runtime) runningFor(id string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	since, ok := r.started[id]
	if !ok {
		since = time.Now()
		r.started[id] = since
	}
	return time.Since(since)
}

// markStarted notes that domain id was started now; forget forgets it.
func (r *Runtime) markStarted(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started[id] = time.Now()
}

func (r *Runtime) forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.started, id)
}

// compileBooted compiles Config.BootedPattern.
func compileBooted(pattern string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("libvirt: booted pattern: %w", err)
	}
	return re, nil
}
