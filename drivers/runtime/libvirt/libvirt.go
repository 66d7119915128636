// Package libvirt is the runtime driver of real hypervisor hosts: it runs
// the domains of a host's NodeSpec through libvirtd, over its unix socket,
// with go-libvirt. Each domain boots from a qcow2 overlay over a cached,
// verified base image and reads a NoCloud seed; nothing of the platform
// runs in or is handed to the guest.
//
// The driver owns only the domains it defined: they are named "bc-<id>" and
// carry the instance ID and the driver's state directory in their metadata,
// so a restarted daemon adopts them and never touches anyone else's.
package libvirt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/digitalocean/go-libvirt/socket/dialers"

	"github.com/better-compute/vps/drivers/runtime/xid"
	"github.com/better-compute/vps/hostd"
	"github.com/better-compute/vps/hostproto"
)

// Images gives a local path of a verified base image.
type Images interface {
	Get(ctx context.Context, img hostproto.Image) (string, error)
}

// Config configures a Runtime.
type Config struct {
	// URI is the libvirt connection. Default qemu:///system.
	URI string
	// Socket is libvirtd's unix socket. Default /var/run/libvirt/libvirt-sock.
	Socket string
	// DomainType is kvm or qemu (software emulation). Default kvm when
	// /dev/kvm exists, else qemu. Nested hosts whose KVM opens but hangs
	// guests must say qemu.
	DomainType string
	// StateDir holds overlays, seeds and console logs; libvirt's QEMU user
	// must be able to reach it. Default /var/lib/better-compute.
	StateDir string
	// SnapshotDir is the snapshot store: one self-contained qcow2 file per
	// snapshot (snapshots.go). A directory shared by hosts (the same path
	// on each) lets a deployment restore a snapshot on any of them. libvirt's
	// QEMU user must be able to write it. Default StateDir/snapshots.
	SnapshotDir string
	// Images is the base-image cache. Required.
	Images Images
	// Bridge is the host bridge NICs join. Empty: user-mode networking,
	// for hosts without one (and tests), which no network filter can hold:
	// an instance with a NetworkPolicy needs a Bridge.
	Bridge string
	// BootedPattern is a regular expression of the console line that says
	// a guest has booted (Booted). Default DefaultBootedPattern.
	BootedPattern string
	// BootTimeout is how long after its start a guest whose console says
	// nothing of BootedPattern counts as booted. Default
	// DefaultBootTimeout.
	BootTimeout time.Duration
	// KmsgPath is the kernel log read for GPU Xid events, from the
	// runtime's start. Default xid.KmsgPath (/dev/kmsg); one that cannot be
	// read is logged once, and the host runs without Xids.
	KmsgPath string
	// Logger logs. Default slog.Default().
	Logger *slog.Logger
}

func (c *Config) applyDefaults() {
	if c.URI == "" {
		c.URI = string(golibvirt.QEMUSystem)
	}
	if c.Socket == "" {
		c.Socket = "/var/run/libvirt/libvirt-sock"
	}
	if c.DomainType == "" {
		c.DomainType = "qemu"
		if _, err := os.Stat("/dev/kvm"); err == nil {
			c.DomainType = "kvm"
		}
	}
	if c.StateDir == "" {
		c.StateDir = "/var/lib/better-compute"
	}
	if c.SnapshotDir == "" {
		c.SnapshotDir = filepath.Join(c.StateDir, snapshotDir)
	}
	if c.BootedPattern == "" {
		c.BootedPattern = DefaultBootedPattern
	}
	if c.BootTimeout <= 0 {
		c.BootTimeout = DefaultBootTimeout
	}
	if c.KmsgPath == "" {
		c.KmsgPath = xid.KmsgPath
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Runtime is the libvirt hostd.Runtime.
type Runtime struct {
	cfg     Config
	l       *golibvirt.Libvirt
	log     *slog.Logger
	changes chan struct{}
	cancel  context.CancelFunc
	defines sync.Mutex // one Define at a time: overlays and seeds are per instance, but simple beats clever
	booted  *regexp.Regexp

	mu sync.Mutex
	// started holds when each domain was started, for BootTimeout.
	started map[string]time.Time
	// snapping holds, for each instance a snapshot is being taken of, a
	// channel closed when it is done (claimSnapshots).
	snapping map[string]chan struct{}

	// xids holds the Xid events read from the kernel log until Xids takes
	// them; following ends when Close stops it.
	xids      *xid.Collector
	following sync.WaitGroup
}

var _ hostd.Runtime = (*Runtime)(nil)

// New connects to libvirtd and starts watching domain lifecycle events.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	cfg.applyDefaults()
	if cfg.Images == nil {
		return nil, errors.New("libvirt: no image cache")
	}
	booted, err := compileBooted(cfg.BootedPattern)
	if err != nil {
		return nil, err
	}
	for _, dir := range []string{filepath.Join(cfg.StateDir, overlayDir), filepath.Join(cfg.StateDir, seedDir), filepath.Join(cfg.StateDir, consoleDir), cfg.SnapshotDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("libvirt: %w", err)
		}
	}
	l := golibvirt.NewWithDialer(dialers.NewLocal(dialers.WithSocket(cfg.Socket), dialers.WithLocalTimeout(5*time.Second)))
	if err := l.ConnectToURI(golibvirt.ConnectURI(cfg.URI)); err != nil {
		return nil, fmt.Errorf("libvirt: connect to %s over %s: %w", cfg.URI, cfg.Socket, err)
	}
	r := &Runtime{cfg: cfg, l: l, log: cfg.Logger, changes: make(chan struct{}, 1), booted: booted,
		started: make(map[string]time.Time), snapping: make(map[string]chan struct{})}
	watchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	events, err := l.LifecycleEvents(watchCtx)
	if err != nil {
		cancel()
		l.Disconnect()
		return nil, fmt.Errorf("libvirt: watch lifecycle events: %w", err)
	}
	go func() {
		for range events {
			r.signal()
		}
	}()
	r.xids = xid.NewCollector(0, r.signal)
	r.following.Go(func() { xid.Follow(watchCtx, cfg.KmsgPath, r.xids, r.log) })
	return r, nil
}

// Close disconnects, and then stops watching events and the kernel log.
// In that order: stopping the event watch first sends libvirtd the
// callback's deregistration while the connection closes, a race that
// crashed Debian's libvirtd 9.0 (segfault after "domain event callback N
// not registered"); closed first, libvirtd drops the callback itself.
func (r *Runtime) Close() error {
	err := r.l.Disconnect()
	r.cancel()
	r.following.Wait()
	return err
}

// Xids implements hostd.Runtime: the Xid events read from the kernel log
// (Config.KmsgPath) since the last call. Each one signals Changes.
func (r *Runtime) Xids() []hostproto.Xid { return r.xids.Take() }

// Changes implements hostd.Runtime: it fires on every lifecycle event of
// any domain (the daemon reads them all again), so a domain that dies or is
// destroyed by hand is reported at once.
func (r *Runtime) Changes() <-chan struct{} { return r.changes }

func (r *Runtime) signal() {
	select {
	case r.changes <- struct{}{}:
	default:
	}
}

// Subdirectories of StateDir.
const (
	overlayDir = "overlays"
	seedDir    = "seeds"
	consoleDir = "consoles"
	// snapshotDir is Config.SnapshotDir's default.
	snapshotDir = "snapshots"
)

func (r *Runtime) overlay(id string) string {
	return filepath.Join(r.cfg.StateDir, overlayDir, id+".qcow2")
}

func (r *Runtime) seed(id string) string { return filepath.Join(r.cfg.StateDir, seedDir, id+".iso") }

func (r *Runtime) console(id string) string {
	return filepath.Join(r.cfg.StateDir, consoleDir, id+".log")
}

// domainName is the libvirt name of an instance's domain.
func domainName(id string) string { return "bc-" + id }

// lookup finds the domain of instance id; ok is false when there is none.
func (r *Runtime) lookup(id string) (golibvirt.Domain, bool, error) {
	d, err := r.l.DomainLookupByName(domainName(id))
	if golibvirt.IsNotFound(err) {
		return d, false, nil
	}
	if err != nil {
		return d, false, fmt.Errorf("look up %s: %w", id, err)
	}
	if _, ours := r.owner(d); !ours {
		return d, false, fmt.Errorf("%s: a domain of that name exists and is not this host's", id)
	}
	return d, true, nil
}
