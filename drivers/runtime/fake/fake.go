// Package fake is an in-memory hypervisor: a hostd.Runtime for the simulator
// and the tests, and the behavioural model the libvirt driver matches.
//
// A domain is stopped, booting, running or paused. Booting is the time
// between Start and running (Config.BootDelay); Domains reports a booting
// domain as stopped. The calls act on the states as follows (a dash means
// no change and no error):
//
//	           stopped          booting     running   paused
//	Start      boot (1)         -           -         error
//	Shutdown   -                stopped     stopped   stopped
//	Pause      error            error       paused    -
//	Resume     error            error       -         running
//	Undefine   removed          removed     removed   removed
//
// (1) running at once when BootDelay is zero, else booting until it passes.
//
// Define of a domain that exists changes nothing. Calls on a domain that
// does not exist fail with ErrNoDomain, except Undefine, which succeeds.
//
// Start and Shutdown clear the Reason of a domain that stopped on its own.
// Calls never block: the guests always obey Shutdown at once, so its timeout
// is never reached, and the contexts are not consulted.
//
// Changes is signalled when a domain changes state on its own: a boot
// completes, a domain crashes (Crash) or is destroyed by hand
// (DestroyByHand). The calls themselves never signal it.
//
// Booted is true of a running domain: a fake guest has booted once its
// domain runs. Stats synthesizes plausible figures: a running domain uses a
// quarter of its vCPUs (its CPU time grows with the time it runs, not while
// paused) and half of its memory, running or paused.
//
// Define records the egress rules of the spec's NetworkPolicy
// (netpolicy.Rules), which Rules returns; a policy or an env no host could
// enforce or write fails Define with hostd.ErrInvalid.
//
// # Disks and snapshots
//
// A domain's disk is a few bytes (Disk): a line naming its image's URL and
// sha256, then what WriteDisk appended, standing for a guest writing files.
// Snapshots are files in the snapshot store (Config.SnapshotDir, default
// StateDir/snapshots), one per snapshot ID, whose content is the disk:
//
//	           stopped   booting   running    paused
//	Snapshot   error     error     file (2)   file (2)
//
// (2) after Config.SnapshotDelay, which ctx cancels; written to a temporary
// file, synced and renamed, so a snapshot is complete or absent. A snapshot
// complete in the store is returned as it is, whatever its domain does.
// PurgeSnapshot removes the file (absent: success). Define with
// RestoreFrom starts the disk as the snapshot's content; a snapshot missing
// from the store fails it with hostd.ErrInvalid. FailSnapshots fails every
// Snapshot on demand.
package fake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/better-compute/vps/drivers/runtime/netpolicy"
	"github.com/better-compute/vps/drivers/runtime/nocloud"
	"github.com/better-compute/vps/drivers/runtime/xid"
	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/hostproto"
)

// OverlayDir is where a domain's overlay would be; the fake records the path
// and writes nothing.
const OverlayDir = "/var/lib/better-compute/overlays"

// CrashReason is the Reason of a domain stopped by Crash.
const CrashReason = "crashed"

// ErrNoDomain is wrapped by the errors of calls on a domain that does not
// exist.
var ErrNoDomain = errors.New("no such domain")

// Config configures a Hypervisor. The zero Config is a usable host.
type Config struct {
	// Inventory is what Inventory reports. Zero fields take the defaults:
	// 32 vCPUs, 65536 MiB of memory, 1000 GiB of disk; GPUs default to
	// GPUs fake ones.
	Inventory hostproto.Inventory
	// GPUs is how many fake NVIDIA GPUs (model GPUModel, at GPUAddress(0),
	// GPUAddress(1), …) the inventory has when it names none. Default 0.
	GPUs int
	// KmsgFile is a file standing in for the kernel log: the hypervisor
	// follows it from its start, and each NVIDIA Xid line appended to it
	// (xid.Parse) becomes an Xid event, as /dev/kmsg's on a real host.
	// Default: none; InjectXid still injects.
	KmsgFile string
	// Logger logs what goes wrong reading KmsgFile. Default slog.Default().
	Logger *slog.Logger
	// BootDelay is how long a started domain boots before it is running.
	// Zero: Start leaves it running.
	BootDelay time.Duration
	// StateDir is where the hypervisor keeps its files: its snapshot store
	// (StateDir/snapshots) unless SnapshotDir is set. Default: none.
	StateDir string
	// SnapshotDir is the snapshot store. Default StateDir/snapshots; with
	// neither, Snapshot and a Define that restores fail.
	SnapshotDir string
	// SnapshotDelay is how long Snapshot takes, a slow disk copy that
	// ctx cancels. Zero: at once.
	SnapshotDelay time.Duration
}

func (c Config) withDefaults() Config {
	if c.Inventory.Vcpus == 0 {
		c.Inventory.Vcpus = 32
	}
	if c.Inventory.MemoryMB == 0 {
		c.Inventory.MemoryMB = 65536
	}
	if c.Inventory.DiskGB == 0 {
		c.Inventory.DiskGB = 1000
	}
	if c.SnapshotDir == "" && c.StateDir != "" {
		c.SnapshotDir = filepath.Join(c.StateDir, "snapshots")
	}
	if len(c.Inventory.GPUs) == 0 {
		for i := range c.GPUs {
			c.Inventory.GPUs = append(c.Inventory.GPUs, hostproto.GPU{Address: GPUAddress(i), Vendor: "NVIDIA", Model: GPUModel})
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// GPUModel is the model of the fake GPUs (Config.GPUs).
const GPUModel = "fake-gpu"

// GPUAddress is the PCI address of fake GPU i: 0000:3b:00.0 for the first,
// then a bus further for each.
func GPUAddress(i int) string { return fmt.Sprintf("0000:%02x:00.0", 0x3b+i) }

// Hypervisor is the fake hostd.Runtime. It is safe for concurrent use. Close
// it when done, to stop the timers of booting domains.
type Hypervisor struct {
	cfg     Config
	changes chan struct{}

	mu       sync.Mutex
	domains  map[string]*domain
	calls    map[string]Calls
	failures failures
	closed   bool
	// boots numbers the boots, so that a boot timer that fires late can
	// tell whether it is still the domain's boot.
	boots uint64

	// xids holds the Xid events injected or read from Config.KmsgFile
	// until Xids takes them; following ends at Close.
	xids      *xid.Collector
	stop      context.CancelFunc
	following sync.WaitGroup
}

var _ hostd.Runtime = (*Hypervisor)(nil)

// domain is one defined domain.
type domain struct {
	spec    hostproto.InstanceSpec
	state   hostd.DomainState
	reason  string
	overlay string
	seed    nocloud.Seed
	rules   []netpolicy.Rule
	// disk is the content of the domain's disk: its image's URL and sha256,
	// or its snapshot's content, then what WriteDisk appended.
	disk []byte
	// cpu is the CPU time used until the domain last stopped running,
	// and since when it has run (zero unless running).
	cpu   time.Duration
	since time.Time
	// boot is the timer that makes a booting domain running, and bootID
	// the number of that boot; boot is nil unless the domain is booting
	// (its state is then stopped).
	boot   *time.Timer
	bootID uint64
}

// New returns a Hypervisor with no domains. With a Config.KmsgFile it
// follows that file until Close.
func New(cfg Config) *Hypervisor {
	h := &Hypervisor{
		cfg:     cfg.withDefaults(),
		changes: make(chan struct{}, 1),
		domains: make(map[string]*domain),
		calls:   make(map[string]Calls),
	}
	h.xids = xid.NewCollector(0, h.signal)
	ctx, stop := context.WithCancel(context.Background())
	h.stop = stop
	if h.cfg.KmsgFile != "" {
		h.following.Go(func() { xid.Follow(ctx, h.cfg.KmsgFile, h.xids, h.cfg.Logger) })
	}
	return h
}

// Domains lists every domain, sorted by ID. A booting domain is stopped.
func (h *Hypervisor) Domains(ctx context.Context) ([]hostd.Domain, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]hostd.Domain, 0, len(h.domains))
	for id, d := range h.domains {
		out = append(out, hostd.Domain{ID: id, State: d.state, Reason: d.reason})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Define creates the domain of spec, stopped, with its overlay path and its
// seed. Defining a domain that exists changes nothing, even when spec
// differs from the one it was defined with. An injected failure (FailDefine,
// FailAllDefines) fails the call before anything else.
func (h *Hypervisor) Define(ctx context.Context, spec hostproto.InstanceSpec) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count(spec.ID, func(c *Calls) { c.Define++ })
	if reason, ok := h.failures.define(spec.ID); ok {
		return fmt.Errorf("define %s: %s", spec.ID, reason)
	}
	if spec.ID == "" {
		return errors.New("define: empty instance id")
	}
	if _, ok := h.domains[spec.ID]; ok {
		return nil
	}
	seed, err := nocloud.New(spec)
	if err != nil {
		return fmt.Errorf("define %s: %w: %w", spec.ID, hostd.ErrInvalid, err)
	}
	rules, err := netpolicy.Rules(spec.NetworkPolicy)
	if err != nil {
		return fmt.Errorf("define %s: %w: %w", spec.ID, hostd.ErrInvalid, err)
	}
	disk, err := h.initialDisk(spec)
	if err != nil {
		return fmt.Errorf("define %s: %w", spec.ID, err)
	}
	h.domains[spec.ID] = &domain{
		spec:    cloneSpec(spec),
		state:   hostd.DomainStopped,
		overlay: OverlayDir + "/" + spec.ID + ".qcow2",
		seed:    seed,
		rules:   rules,
		disk:    disk,
	}
	return nil
}

// Start boots a stopped domain: it is running at once when BootDelay is
// zero, else after BootDelay, when Changes is signalled. Starting a running
// or booting domain does nothing; starting a paused one is an error. An
// injected failure (FailStart, FailAllStarts) fails the call before anything
// else.
func (h *Hypervisor) Start(ctx context.Context, id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count(id, func(c *Calls) { c.Start++ })
	if reason, ok := h.failures.start(id); ok {
		return fmt.Errorf("start %s: %s", id, reason)
	}
	d, err := h.domain("start", id)
	if err != nil {
		return err
	}
	switch {
	case d.state == hostd.DomainPaused:
		return fmt.Errorf("start %s: domain is paused", id)
	case d.state == hostd.DomainRunning || d.boot != nil:
		return nil
	case h.closed:
		return fmt.Errorf("start %s: hypervisor is closed", id)
	}
	d.reason = ""
	if h.cfg.BootDelay == 0 {
		d.set(hostd.DomainRunning)
		return nil
	}
	h.boots++
	boot := h.boots
	d.bootID = boot
	d.boot = time.AfterFunc(h.cfg.BootDelay, func() { h.booted(id, boot) })
	return nil
}

// booted makes the domain id running if boot is still its boot.
func (h *Hypervisor) booted(id string, boot uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.domains[id]
	if !ok || d.boot == nil || d.bootID != boot {
		return // undefined, shut down or crashed while booting
	}
	d.boot = nil
	d.set(hostd.DomainRunning)
	h.signal()
}

// Shutdown stops a domain at once, whatever the timeout. Shutting down a
// stopped domain does nothing.
func (h *Hypervisor) Shutdown(ctx context.Context, id string, timeout time.Duration) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count(id, func(c *Calls) { c.Shutdown++ })
	d, err := h.domain("shutdown", id)
	if err != nil {
		return err
	}
	d.stop("")
	return nil
}

// Pause freezes a running domain. Pausing a paused domain does nothing;
// pausing a stopped or booting one is an error.
func (h *Hypervisor) Pause(ctx context.Context, id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count(id, func(c *Calls) { c.Pause++ })
	d, err := h.domain("pause", id)
	if err != nil {
		return err
	}
	switch {
	case d.boot != nil:
		return fmt.Errorf("pause %s: domain is booting", id)
	case d.state == hostd.DomainStopped:
		return fmt.Errorf("pause %s: domain is stopped", id)
	}
	d.set(hostd.DomainPaused)
	return nil
}

// Resume thaws a paused domain. Resuming a running domain does nothing;
// resuming a stopped or booting one is an error.
func (h *Hypervisor) Resume(ctx context.Context, id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count(id, func(c *Calls) { c.Resume++ })
	d, err := h.domain("resume", id)
	if err != nil {
		return err
	}
	switch {
	case d.boot != nil:
		return fmt.Errorf("resume %s: domain is booting", id)
	case d.state == hostd.DomainStopped:
		return fmt.Errorf("resume %s: domain is stopped", id)
	}
	d.set(hostd.DomainRunning)
	return nil
}

// Booted reports whether domain id runs: a fake guest boots with its
// domain.
func (h *Hypervisor) Booted(ctx context.Context, id string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, err := h.domain("booted", id)
	if err != nil {
		return false, err
	}
	return d.state == hostd.DomainRunning, nil
}

// The share of its vCPUs and of its memory a fake domain uses.
const (
	cpuLoad    = 0.25
	memoryLoad = 0.5
)

// Stats synthesizes the use of every running or paused domain.
func (h *Hypervisor) Stats(ctx context.Context) (map[string]hostproto.Stats, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	out := make(map[string]hostproto.Stats, len(h.domains))
	for id, d := range h.domains {
		if d.state == hostd.DomainStopped {
			continue
		}
		cpu := d.cpu
		if d.state == hostd.DomainRunning {
			cpu += now.Sub(d.since)
		}
		out[id] = hostproto.Stats{
			CPUTimeNs:   int64(float64(cpu.Nanoseconds()) * float64(d.spec.Vcpus) * cpuLoad),
			MemoryBytes: int64(float64(d.spec.MemoryMB<<20) * memoryLoad),
		}
	}
	return out, nil
}

// Undefine removes a domain, with its overlay and seed, in any state.
// Undefining a domain that does not exist succeeds.
func (h *Hypervisor) Undefine(ctx context.Context, id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count(id, func(c *Calls) { c.Undefine++ })
	h.remove(id)
	return nil
}

// Inventory reports Config.Inventory.
func (h *Hypervisor) Inventory(ctx context.Context) (hostproto.Inventory, error) {
	inv := h.cfg.Inventory
	inv.GPUs = slices.Clone(inv.GPUs)
	return inv, nil
}

// Changes is signalled when a boot completes and by Crash and DestroyByHand.
// It has a capacity of one: signals that find it full are dropped, as one
// pending signal already says "look again".
func (h *Hypervisor) Changes() <-chan struct{} {
	return h.changes
}

// Xids implements hostd.Runtime: the Xid events injected (InjectXid) or
// read from Config.KmsgFile since the last call.
func (h *Hypervisor) Xids() []hostproto.Xid { return h.xids.Take() }

// InjectXid makes x an Xid event of the host, as if its kernel logged it,
// and signals Changes.
func (h *Hypervisor) InjectXid(x hostproto.Xid) { h.xids.Add(x) }

// Close stops following Config.KmsgFile and the timers of booting domains,
// which stay stopped. Start fails after Close; everything else keeps
// working.
func (h *Hypervisor) Close() {
	h.stop()
	h.following.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, d := range h.domains {
		if d.boot != nil {
			d.boot.Stop()
			d.boot = nil
		}
	}
}

// domain returns the domain id, or an error naming op and id.
func (h *Hypervisor) domain(op, id string) (*domain, error) {
	d, ok := h.domains[id]
	if !ok {
		return nil, fmt.Errorf("%s %s: %w", op, id, ErrNoDomain)
	}
	return d, nil
}

// remove deletes the domain id, stopping its boot timer. It reports whether
// the domain existed.
func (h *Hypervisor) remove(id string) bool {
	d, ok := h.domains[id]
	if !ok {
		return false
	}
	d.stop("")
	delete(h.domains, id)
	return true
}

// signal signals Changes without blocking.
func (h *Hypervisor) signal() {
	select {
	case h.changes <- struct{}{}:
	default:
	}
}

// stop makes d stopped with reason, ending a boot under way.
func (d *domain) stop(reason string) {
	if d.boot != nil {
		d.boot.Stop()
		d.boot = nil
	}
	d.set(hostd.DomainStopped)
	d.reason = reason
}

// set moves d to state, counting the time it ran.
func (d *domain) set(state hostd.DomainState) {
	now := time.Now()
	if d.state == hostd.DomainRunning {
		d.cpu += now.Sub(d.since)
	}
	if state == hostd.DomainRunning && d.state != hostd.DomainRunning {
		d.since = now
	}
	if state == hostd.DomainStopped {
		d.cpu = 0 // a new boot starts counting again
	}
	d.state = state
}

// cloneSpec copies spec, so that the caller's slices are not shared.
func cloneSpec(spec hostproto.InstanceSpec) hostproto.InstanceSpec {
	spec.SSHKeys = slices.Clone(spec.SSHKeys)
	spec.GPUs = slices.Clone(spec.GPUs)
	spec.Env = maps.Clone(spec.Env)
	if p := spec.NetworkPolicy; p != nil {
		spec.NetworkPolicy = &hostproto.NetworkPolicy{
			AllowInternetAccess: p.AllowInternetAccess,
			AllowOut:            slices.Clone(p.AllowOut),
			DenyOut:             slices.Clone(p.DenyOut),
		}
	}
	if spec.Network != nil {
		n := *spec.Network
		n.DNS = slices.Clone(n.DNS)
		spec.Network = &n
	}
	return spec
}
