package hostd

import (
	"context"
	"errors"
	"time"

	"github.com/better-compute/vps/hostproto"
)

// Runtime runs the domains (VMs) of one host. Drivers implement it: fake
// for simulation, libvirt for real hosts. It does what it is told; the
// daemon decides what to tell it.
type Runtime interface {
	// Domains lists the domains this daemon owns, whatever their state.
	Domains(ctx context.Context) ([]Domain, error)
	// Define creates the domain of spec, its disk (an overlay over the
	// image, or over the snapshot spec.RestoreFrom names, which a missing
	// snapshot fails with ErrInvalid) and its NoCloud seed, without
	// starting it. Defining a domain that exists succeeds and changes
	// nothing.
	Define(ctx context.Context, spec hostproto.InstanceSpec) error
	// Start boots a defined, stopped domain.
	Start(ctx context.Context, id string) error
	// Shutdown asks the guest to stop and destroys it after timeout.
	Shutdown(ctx context.Context, id string, timeout time.Duration) error
	// Pause freezes a running domain; Resume thaws it.
	Pause(ctx context.Context, id string) error
	Resume(ctx context.Context, id string) error
	// Booted reports whether the guest of a running domain has finished
	// booting, so that a domain held paused is paused booted, ready to
	// resume at once, not frozen in its firmware.
	Booted(ctx context.Context, id string) (bool, error)
	// Stats reads what each running or paused domain uses of the host, by
	// instance ID. A domain it could not read is missing.
	Stats(ctx context.Context) (map[string]hostproto.Stats, error)
	// Snapshot copies the disk of the running or paused domain id, without
	// stopping it, into the host's snapshot store as snapshot snap (snp_…).
	// It is idempotent by snap: a complete snapshot in the store is
	// returned as it is; partial files of an interrupted one are removed
	// and it is taken again. Cancelling ctx leaves no partial files.
	Snapshot(ctx context.Context, id, snap string) (hostproto.SnapshotResult, error)
	// PurgeSnapshot removes snapshot snap from the store; purging one the
	// store does not have succeeds.
	PurgeSnapshot(ctx context.Context, snap string) error
	// Undefine stops the domain if needed and removes it with its overlay
	// and seed. Undefining a domain that does not exist succeeds.
	Undefine(ctx context.Context, id string) error
	// Inventory reports the host's vCPUs, memory, disk and GPUs.
	Inventory(ctx context.Context) (hostproto.Inventory, error)
	// Xids returns the Xid events the host's kernel logged for its GPUs
	// since the last call, oldest first, and forgets them: the daemon
	// keeps them until a report carrying them is accepted.
	Xids() []hostproto.Xid
	// Changes signals, without blocking the runtime, when a domain changed
	// state on its own (it crashed, or was destroyed by hand), or an Xid
	// event came.
	Changes() <-chan struct{}
}

// ErrInvalid marks a runtime error that is the instance's own fault — its
// image is corrupt or not of its format — so that no host could run it. The
// daemon reports such an instance invalid, not failed, and the reconciler
// puts it in ERROR instead of recreating it elsewhere.
var ErrInvalid = errors.New("the instance cannot run on any host")

// Domain is one domain of a runtime.
type Domain struct {
	// ID is the instance ID the domain was defined for.
	ID    string
	State DomainState
	// Reason says why a domain is stopped when it was not asked to be.
	Reason string
}

// DomainState is the power state of a domain.
type DomainState string

// The domain states.
const (
	DomainRunning DomainState = "running"
	DomainStopped DomainState = "stopped"
	DomainPaused  DomainState = "paused"
)
