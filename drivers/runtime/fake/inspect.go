package fake

import (
	"slices"

	"github.com/better-compute/vps/drivers/runtime/netpolicy"
	"github.com/better-compute/vps/drivers/runtime/nocloud"
	"github.com/better-compute/vps/hostproto"
)

// Calls counts the calls made for one instance, or for one snapshot,
// failed and no-op calls included, so that a test can prove that something
// was never done twice.
type Calls struct {
	Define, Start, Shutdown, Pause, Resume, Undefine int
	// Snapshot and PurgeSnapshot are counted by snapshot ID.
	Snapshot, PurgeSnapshot int
}

// Calls returns the calls made so far for instance or snapshot id. They
// survive the domain: Undefine and DestroyByHand do not reset them.
func (h *Hypervisor) Calls(id string) Calls {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[id]
}

// count applies inc to the calls of id; h.mu must be held.
func (h *Hypervisor) count(id string, inc func(*Calls)) {
	c := h.calls[id]
	inc(&c)
	h.calls[id] = c
}

// Spec returns the spec domain id was defined with.
func (h *Hypervisor) Spec(id string) (hostproto.InstanceSpec, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.domains[id]
	if !ok {
		return hostproto.InstanceSpec{}, false
	}
	return cloneSpec(d.spec), true
}

// Seed returns the NoCloud seed of domain id.
func (h *Hypervisor) Seed(id string) (nocloud.Seed, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.domains[id]
	if !ok {
		return nocloud.Seed{}, false
	}
	return d.seed, true
}

// Overlay returns the path of the overlay of domain id.
func (h *Hypervisor) Overlay(id string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.domains[id]
	if !ok {
		return "", false
	}
	return d.overlay, true
}

// Rules returns the egress rules domain id enforces, from the NetworkPolicy
// it was defined with: nil for none.
func (h *Hypervisor) Rules(id string) ([]netpolicy.Rule, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.domains[id]
	if !ok {
		return nil, false
	}
	return slices.Clone(d.rules), true
}

// Disk returns the content of domain id's disk.
func (h *Hypervisor) Disk(id string) ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.domains[id]
	if !ok {
		return nil, false
	}
	return slices.Clone(d.disk), true
}
