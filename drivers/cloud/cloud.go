// Package cloud is what the reconciler asks of a cloud provider (Hetzner
// Cloud, Proxmox VE) to run the instances of a provider pool: servers
// carrying our instance ID as a label, created idempotently (look up by
// label before creating), observed in one list call per account. Drivers
// classify their errors (errors.go) so the reconciler knows whether to
// retry, slow down, or give up.
//
// The drivers are the packages below it, one per provider (hetzner,
// proxmox), each with an emulator of its provider's API beside it as a
// test-support package (hetzner/hetznertest, proxmox/proxmoxtest), the way
// net/http/httptest sits beside net/http; cloudtest injects faults into
// those emulators.
package cloud

import (
	"context"
	"encoding/json"
	"time"
)

// Label is the label (Hetzner) or tag (Proxmox) carrying our instance ID on
// every server a driver makes.
const Label = "better-compute-instance"

// BootstrapLabel is the label (Hetzner) or tag (Proxmox) carrying a
// provider bootstrap's ID on the machine a driver makes to become one of
// our hosts. It is not Label: List and Find never return such a machine, so
// the provider sweep never takes it for an orphaned instance's server;
// FindBootstrap does.
const BootstrapLabel = "better-compute-bootstrap"

// Status is a server's power state as the provider reports it.
type Status string

// The statuses drivers map their provider's onto.
const (
	StatusStarting Status = "starting"
	StatusRunning  Status = "running"
	StatusStopping Status = "stopping"
	StatusStopped  Status = "stopped"
	StatusDeleting Status = "deleting"
	StatusUnknown  Status = "unknown"
)

// Server is a server at the provider that carries our label.
type Server struct {
	// ID is the provider's ID of the server.
	ID string
	// InstanceID is our instance's UUID, from the label.
	InstanceID string
	// BootstrapID is the provider bootstrap's UUID, from BootstrapLabel,
	// on a bootstrap's machine (whose InstanceID is empty).
	BootstrapID string
	Status      Status
	// Addresses are its public IPv4 and IPv6 addresses, when it has any.
	Addresses []string
	// Incomplete: the create that made it stopped before configuring it
	// (Proxmox: cloned, not yet configured). It is never adopted: it is
	// deleted and made again.
	Incomplete bool
}

// CreateRequest asks for a server for an instance.
type CreateRequest struct {
	InstanceID string
	// BootstrapID, instead of InstanceID, makes a provider bootstrap's
	// machine: it carries BootstrapLabel, not Label.
	BootstrapID string
	// Name becomes the server's name and hostname.
	Name string
	// ServerType is the flavor's server type at the provider (Hetzner) or
	// is unused (Proxmox sizes the clone from CPU and memory).
	ServerType string
	Vcpus      int
	MemoryMB   int64
	DiskGB     int64
	// Image is the image's name at the provider, or the template to clone.
	Image    string
	SSHKeys  []string
	UserData string
	// SeedURL is a cloud-init NoCloud seed (ds=nocloud-net) the machine
	// fetches its user data and meta data from, for a provider whose API
	// cannot take user data (Proxmox: the VM's SMBIOS serial). Drivers that
	// take UserData refuse it as Invalid.
	SeedURL string
	// PowerOn starts the server once created.
	PowerOn bool
}

// Driver manages the servers of one provider account.
type Driver interface {
	// Create makes a server for req and returns it; it does not wait for
	// the server to run. Callers look the instance up with List first, so
	// a create repeated after a crash finds the first server.
	Create(ctx context.Context, req CreateRequest) (Server, error)
	// List returns every server of the account that carries our label.
	List(ctx context.Context) ([]Server, error)
	// Find returns the servers carrying an instance's label (normally none
	// or one), in as few calls as the provider allows: the look-up before
	// a create.
	Find(ctx context.Context, instanceID string) ([]Server, error)
	// FindBootstrap returns the machines carrying a provider bootstrap's
	// BootstrapLabel: the look-up before a bootstrap's create.
	FindBootstrap(ctx context.Context, bootstrapID string) ([]Server, error)
	// Start powers a server on and returns its status as the call leaves
	// it: running when the driver waited, starting when the provider goes
	// on alone and the next List shows the server running. A Start repeated
	// while the first is under way makes no call (Asked).
	Start(ctx context.Context, s Ref) (Status, error)
	// Stop shuts a server down, powering it off if it does not stop, and
	// returns its status as the call leaves it: stopped or stopping, as
	// with Start. A Stop repeated while the shutdown is under way makes no
	// call; once the shutdown has had its time, it powers the server off.
	Stop(ctx context.Context, s Ref) (Status, error)
	// Reboot asks a running server's guest to reboot (by ACPI, as the
	// provider does it) and returns once the provider took the request. A
	// server that is not running is Invalid; a repeated Reboot reboots
	// again.
	Reboot(ctx context.Context, s Ref) error
	// Delete removes a server; deleting one that is gone succeeds.
	Delete(ctx context.Context, s Ref) error
	// Budget is what the provider last said of the account's rate limit.
	Budget() Budget
}

// Ref names the server a call acts on: the provider's ID and the instance
// whose label it must carry. Proxmox gives a deleted VM's ID to the next
// clone, so a call retried by ID alone (after a crash between the call and
// its record) could reach another instance's server: a driver whose IDs are
// reused checks the label and treats a server that is not the instance's as
// gone (NotFound; Delete succeeds).
type Ref struct {
	ID         string
	InstanceID string
	// BootstrapID, instead of InstanceID, names a bootstrap's machine.
	BootstrapID string
	// Fresh asks for the server's identity to be read now, not taken
	// from a recent listing: an orphan's ID, seen in a listing, may have
	// been given to a new server since (Proxmox reuses VMIDs).
	Fresh bool
}

// Ref is the server as calls on it name it.
func (s Server) Ref() Ref { return Ref{ID: s.ID, InstanceID: s.InstanceID, BootstrapID: s.BootstrapID} }

// Budget is an account's rate limit as the provider's response headers last
// stated it. The zero Budget means the provider states none (Proxmox).
type Budget struct {
	// Limit is how many requests the bucket holds.
	Limit int
	// Remaining is how many may be made now.
	Remaining int
	// Reset is when the bucket is full again.
	Reset time.Time
}

// Account is what a driver is made from: a provider account with its
// credentials opened.
type Account struct {
	ID string
	// Shared: the account is an operator's, of no tenant, which the
	// endpoint policy lets name any host (Endpoints).
	Shared bool
	// Provider is the kind: "hetzner" or "proxmox".
	Provider    string
	Credentials string
	// Settings are the account's as the API stored them, a JSON object,
	// which the driver's package decodes (ParseSettings).
	Settings json.RawMessage
}

// Factory makes the driver of an account.
type Factory func(Account) (Driver, error)
