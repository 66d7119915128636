// Package hostproto is the versioned protocol between the host gateway (in
// `serve`) and the host daemon: the NodeSpec a host long-polls and the
// runtime report it posts back. docs/host-protocol.md describes it.
package hostproto

import (
	"fmt"
	"time"
)

// Version is the newest protocol version, the one this build's host daemon
// speaks; it is part of every path. Version 2 added InstanceSpec.Env and
// NetworkPolicy, InstanceStatus.Stats, and the boot-then-pause of instances
// whose power is paused (SandboxVersion). Version 3 added host commands
// (NodeSpec.Commands, Report.Commands), restores (InstanceSpec.RestoreFrom)
// and per-instance generations in reports (InstanceStatus.Generation,
// StateDefining) (CommandsVersion). Version 4 added the GPU Xid events of
// reports (Report.Xids) (XidsVersion). Version 5 added spec deltas
// (NodeSpec.After, NodeSpec.Unchanged, InstanceSpec.Generation) and
// partial reports (Report.Partial, Report.Absent) (DeltaVersion). Version
// 6 added the stats of partial reports (Report.Stats), which made the
// heartbeat's report partial (HeartbeatVersion).
const Version = 6

// MinVersion is the oldest version the gateway serves. It serves every
// version from MinVersion to Version, each on its own paths, so a rolling
// upgrade leaves older daemons serving their instances; placement gives a
// host only instances its version can honour (docs/host-protocol.md).
const MinVersion = 1

// SandboxVersion is the version that added env, network policies, stats
// and boot-then-pause: what an instance of a sandbox or a warm pool needs.
const SandboxVersion = 2

// CommandsVersion is the version that added commands, restores and
// per-instance generations: what a snapshot or a restored instance needs.
const CommandsVersion = 3

// XidsVersion is the version that added Xid events to reports. No instance
// needs it: a host of an older version runs GPU instances all the same,
// but the control plane hears nothing of its GPUs' faults.
const XidsVersion = 4

// DeltaVersion is the version that added spec deltas and partial reports:
// a host polling with after > 0 is sent in full only the entries that
// changed since, and reports only the statuses that changed, so what a
// change costs no longer grows with the instances on its host. No
// instance needs it.
const DeltaVersion = 5

// HeartbeatVersion is the version that added Report.Stats: a partial
// report may carry the stats of the host's running and paused instances,
// so the heartbeat's report, which carries them, need not be whole, and
// an idle host's heartbeat costs what changed, not what it holds. No
// instance needs it.
const HeartbeatVersion = 6

// Paths of the gateway for this build's version, relative to the server's
// base URL.
var (
	// SpecPath is long-polled: GET SpecPath?after=GEN answers with the
	// NodeSpec once its generation is above GEN, or 204 No Content when
	// nothing changed within the wait (at most MaxWait).
	SpecPath = SpecPathOf(Version)
	// ReportPath takes a Report by POST.
	ReportPath = ReportPathOf(Version)
)

// PathPrefix is where the paths of a version start: /host/vN/.
func PathPrefix(version int) string { return fmt.Sprintf("/host/v%d/", version) }

// SpecPathOf is the spec path of a version.
func SpecPathOf(version int) string { return PathPrefix(version) + "spec" }

// ReportPathOf is the report path of a version.
func ReportPathOf(version int) string { return PathPrefix(version) + "report" }

// Header names the protocol version a host speaks; it must be the version
// of the request's path, or the gateway answers 400.
const Header = "BC-Host-Protocol"

// RuntimeHeader names the runtime the host daemon runs (libvirt-kvm,
// fake), on every request from protocol 3 on. The gateway records it on
// the host and refuses (400) a host whose runtime is not its pool's. A
// request without it (an older daemon) is served unchecked.
const RuntimeHeader = "BC-Host-Runtime"

// Power is what the host must hold an instance at. An instance whose power
// is paused and whose domain is stopped is booted first and paused once its
// guest has booted (a warm instance, ready to resume); until then it is
// reported running.
type Power string

// The powers.
const (
	PowerRunning Power = "running"
	PowerStopped Power = "stopped"
	PowerPaused  Power = "paused"
)

// NodeSpec is everything a host must run. An instance not in it must not
// exist on the host.
type NodeSpec struct {
	Protocol int    `json:"protocol"`
	HostID   string `json:"hostId"`
	// Generation increases with every change to the spec.
	Generation int64 `json:"generation"`
	// After is, in a delta (version 5), the generation the delta is to:
	// the one the host said it holds. Instances then has only the entries
	// that changed after it, and Unchanged the others. Zero: the spec is
	// whole.
	After     int64          `json:"after,omitempty"`
	Instances []InstanceSpec `json:"instances"`
	// Unchanged are, in a delta, the instances whose entry has not changed
	// since After: the host runs the entry it holds (version 5).
	Unchanged []EntryRef `json:"unchanged,omitempty"`
	// Commands are the host's open commands, oldest first (version 3).
	Commands []Command `json:"commands,omitempty"`
}

// EntryRef names an instance's entry of a NodeSpec without its contents:
// the entry a host already holds (version 5).
type EntryRef struct {
	ID string `json:"id"`
	// Generation is the entry's generation (InstanceSpec.Generation).
	Generation int64 `json:"generation"`
}

// InstanceSpec is one instance of a NodeSpec.
type InstanceSpec struct {
	// ID is the instance's API ID (ins_…).
	ID string `json:"id"`
	// Generation is the spec generation at which this entry last changed
	// (version 5): a delta sends it again only once it changed after the
	// generation the host holds.
	Generation int64 `json:"generation,omitempty"`
	// Name becomes the guest's hostname.
	Name     string   `json:"name"`
	Power    Power    `json:"power"`
	Vcpus    int      `json:"vcpus"`
	MemoryMB int64    `json:"memoryMb"`
	DiskGB   int64    `json:"diskGb"`
	Image    Image    `json:"image"`
	SSHKeys  []string `json:"sshKeys"`
	// UserData is the tenant's user data, opened for the host.
	UserData string `json:"userData,omitempty"`
	// Network is absent when the pool has no IP range.
	Network *Network `json:"network,omitempty"`
	// GPUs are the host's devices claimed for this instance, to pass through.
	GPUs []Device `json:"gpus,omitempty"`
	// Env are environment variables, by name, opened by the gateway for
	// this host. They reach the guest in the NoCloud seed's vendor-data
	// (drivers/runtime/nocloud), beside the tenant's untouched user data.
	Env map[string]string `json:"env,omitempty"`
	// NetworkPolicy restricts the instance's egress, enforced on the host,
	// outside the guest. Absent: no restriction.
	NetworkPolicy *NetworkPolicy `json:"networkPolicy,omitempty"`
	// RestoreFrom names a snapshot in the host's snapshot store (snp_…)
	// whose disk the instance boots from instead of its image's; the
	// instance still gets its own seed (version 3).
	RestoreFrom string `json:"restoreFrom,omitempty"`
}

// NetworkPolicy is what an instance may reach. Entries are IPv4 addresses or
// CIDRs. Allow wins over deny: an address in AllowOut is reachable whatever
// DenyOut says. Without internet access the instance reaches only AllowOut;
// with it, everything but DenyOut. Whatever the policy, the guest may answer
// connections made to it and speak ARP and DHCP.
type NetworkPolicy struct {
	AllowInternetAccess bool     `json:"allowInternetAccess"`
	AllowOut            []string `json:"allowOut,omitempty"`
	DenyOut             []string `json:"denyOut,omitempty"`
}

// Image is what an instance boots from.
type Image struct {
	URL    string `json:"url"`
	SHA256 string `json:"sha256"`
	// Format is raw, qcow2 or iso.
	Format string `json:"format"`
}

// Network is an instance's static IPv4 configuration.
type Network struct {
	MAC string `json:"mac"`
	// Address is in CIDR form, such as 10.0.0.5/24.
	Address string   `json:"address"`
	Gateway string   `json:"gateway"`
	DNS     []string `json:"dns,omitempty"`
}

// Device is a PCI device of the host.
type Device struct {
	Address string `json:"address"`
}

// State is what a host saw of an instance.
type State string

// The states a host reports. An instance of the spec that is missing from a
// report is absent.
const (
	StateRunning State = "running"
	StateStopped State = "stopped"
	StatePaused  State = "paused"
	// StateFailed: the host could not define or start it; Reason says why.
	// Another host may do better.
	StateFailed State = "failed"
	// StateInvalid: the instance itself cannot run (its image is corrupt
	// or not of its format); no host would do better. Reason says why.
	StateInvalid State = "invalid"
	// StateDefining: the host is still making the domain of an instance
	// of its spec (fetching its image, writing its disk); its status's
	// Generation is older than the entry it works on, so the gateway
	// records nothing of it (version 3).
	StateDefining State = "defining"
)

// Report is what a host posts after converging and as its heartbeat.
type Report struct {
	Protocol int `json:"protocol"`
	// Partial (version 5): Instances has only the statuses that changed
	// since the host's last accepted report, and Absent the instances that
	// report listed and the host no longer has; an instance of the spec
	// missing from it is not absent. A partial report's statuses have no
	// stats; from version 6 its Stats may have them.
	Partial bool `json:"partial,omitempty"`
	// Generation is the spec generation the host last converged to; from
	// version 3, the newest it received, each instance's status saying
	// which it speaks for.
	Generation int64            `json:"generation"`
	Instances  []InstanceStatus `json:"instances"`
	// Absent are, in a partial report, the instances the host's last
	// accepted report listed that it no longer has (version 5).
	Absent []string `json:"absent,omitempty"`
	// Stats are, in a partial report, the stats of running and paused
	// instances by ID, whether or not their status changed (version 6);
	// a whole report carries them in its statuses.
	Stats map[string]Stats `json:"stats,omitempty"`
	// Inventory is what the host has; sent at least with its first report.
	Inventory *Inventory `json:"inventory,omitempty"`
	// Commands are the statuses of the spec's commands the host knows
	// (version 3).
	Commands []CommandStatus `json:"commands,omitempty"`
	// Xids are the Xid events the host's kernel logged for its GPUs since
	// its last accepted report, oldest first, at most MaxXids (version 4).
	// The host forgets them once a report carrying them is accepted.
	Xids []Xid `json:"xids,omitempty"`
}

// Xid is an NVIDIA Xid event: the GPU driver's report of a fault of one
// device, as the kernel logged it ("NVRM: Xid (PCI:0000:3b:00): 79, …").
type Xid struct {
	// Address is the GPU's PCI address as the inventory has it, such as
	// 0000:3b:00.0.
	Address string `json:"address"`
	// Code is the Xid number, from 1 to MaxXidCode.
	Code int `json:"code"`
	// Message is the driver's text after the code, without the pid and
	// process name, at most MaxXidMessage bytes.
	Message string `json:"message,omitempty"`
	// At is when the host read the event.
	At time.Time `json:"at"`
}

// Bounds of Xid events.
const (
	// MaxXids bounds the Xid events of one report.
	MaxXids = 64
	// MaxXidCode is the highest Xid number.
	MaxXidCode = 999
	// MaxXidMessage bounds an Xid's message, in bytes.
	MaxXidMessage = 512
)

// InstanceStatus is one instance as the host saw it.
type InstanceStatus struct {
	ID     string `json:"id"`
	State  State  `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Stats is the domain's use of the host, for a running or paused
	// domain whose runtime could read it.
	Stats *Stats `json:"stats,omitempty"`
	// Generation is the spec generation whose entry for this instance the
	// host last finished converging it to (version 3): a host converges
	// instances concurrently, so one may lag the report's Generation.
	// Zero (omitted) stands for the report's Generation. From version 5
	// it is the entry's own generation (InstanceSpec.Generation), which
	// stays put while the entry does, so a status unchanged in every other
	// way is left out of partial reports.
	Generation int64 `json:"generation,omitempty"`
}

// Stats is what a domain uses of its host, sampled when the report is made.
type Stats struct {
	// CPUTimeNs is the CPU time the domain has used since it started, in
	// nanoseconds, all vCPUs together: two reports give its CPU use.
	CPUTimeNs int64 `json:"cpuTimeNs"`
	// MemoryBytes is the host memory the domain holds (its resident set).
	MemoryBytes int64 `json:"memoryBytes"`
}

// Inventory is what a host has to give.
type Inventory struct {
	Vcpus    int   `json:"vcpus"`
	MemoryMB int64 `json:"memoryMb"`
	DiskGB   int64 `json:"diskGb"`
	GPUs     []GPU `json:"gpus,omitempty"`
}

// GPU is a PCI GPU of a host.
type GPU struct {
	Address string `json:"address"`
	Vendor  string `json:"vendor"`
	Model   string `json:"model"`
}

// MaxWaitSeconds is the longest the gateway holds a spec long-poll.
const MaxWaitSeconds = 30
