package fake

import (
	"fmt"

	"github.com/better-compute/vps/hostd"
)

// failures are the injected failures of Define and Start: per instance, and
// for every instance when all* is set.
type failures struct {
	defines, starts       map[string]string
	allDefines, allStarts string
	// snapshots fails every Snapshot when set.
	snapshots string
}

func (f *failures) define(id string) (string, bool) {
	return lookup(f.defines, f.allDefines, id)
}

func (f *failures) start(id string) (string, bool) {
	return lookup(f.starts, f.allStarts, id)
}

// lookup returns the reason a call for id fails: its own, else all's.
func lookup(byID map[string]string, all, id string) (string, bool) {
	if reason, ok := byID[id]; ok {
		return reason, true
	}
	return all, all != ""
}

// FailDefine makes every Define of instance id fail, with an error that
// includes reason, until ClearFailures.
func (h *Hypervisor) FailDefine(id, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures.defines == nil {
		h.failures.defines = make(map[string]string)
	}
	h.failures.defines[id] = reason
}

// FailStart makes every Start of instance id fail, with an error that
// includes reason, until ClearFailures.
func (h *Hypervisor) FailStart(id, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures.starts == nil {
		h.failures.starts = make(map[string]string)
	}
	h.failures.starts[id] = reason
}

// FailAllDefines makes every Define fail, with an error that includes
// reason, until ClearFailures. An empty reason fails nothing.
func (h *Hypervisor) FailAllDefines(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failures.allDefines = reason
}

// FailAllStarts makes every Start fail, with an error that includes reason,
// until ClearFailures. An empty reason fails nothing.
func (h *Hypervisor) FailAllStarts(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failures.allStarts = reason
}

// FailSnapshots makes every Snapshot fail, with an error that includes
// reason, until ClearFailures. An empty reason fails nothing.
func (h *Hypervisor) FailSnapshots(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failures.snapshots = reason
}

// ClearFailures removes every injected failure.
func (h *Hypervisor) ClearFailures() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failures = failures{}
}

// Crash stops a running, booting or paused domain on its own: it becomes
// stopped with Reason CrashReason, and Changes is signalled. Crashing a
// stopped or unknown domain is an error.
func (h *Hypervisor) Crash(id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, err := h.domain("crash", id)
	if err != nil {
		return err
	}
	if d.state == hostd.DomainStopped && d.boot == nil {
		return fmt.Errorf("crash %s: domain is stopped", id)
	}
	d.stop(CrashReason)
	h.signal()
	return nil
}

// DestroyByHand removes a domain, with its overlay and seed, as an operator
// at the host's shell would, and signals Changes. Destroying an unknown
// domain is an error.
func (h *Hypervisor) DestroyByHand(id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.remove(id) {
		return fmt.Errorf("destroy %s: %w", id, ErrNoDomain)
	}
	h.signal()
	return nil
}
