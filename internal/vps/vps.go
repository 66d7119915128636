// Package vps holds the names and defaults that the API, the reconciler and
// the gateway share: work topics, pool classes, and the defaults every
// process must agree on. It imports nothing of ours, so any package may use it.
package vps

import "time"

// Work topics: an outbox row or stream entry's topic names the reconciler
// kind that handles it.
const (
	// TopicInstances is the topic of the vps.instances reconciler, woken
	// by every change to an instance.
	TopicInstances = "vps.instances"
	// TopicSandboxes is the topic of the vps.sandboxes reconciler, whose
	// keys are sandbox templates: woken to keep a template's warm pool.
	TopicSandboxes = "vps.sandboxes"
	// TopicCommands carries host commands that became final (the host
	// reported their end, or their deadline passed), to their kind's owner.
	TopicCommands = "vps.commands"
	// TopicSnapshots is the topic of the vps.snapshots reconciler, whose
	// keys are sandbox snapshots: woken to queue a snapshot's take or its
	// purge.
	TopicSnapshots = "vps.snapshots"
	// TopicEvents is the topic of an outbox row that is an event only:
	// the relay publishes it and hands no work to the reconciler.
	TopicEvents = "vps.events"
	// TopicBootstraps is the topic of the vps.bootstraps reconciler, whose
	// keys are provider bootstraps: woken to create a bootstrap's machine.
	TopicBootstraps = "vps.bootstraps"
)

// Pool classes that take instances.
const (
	// ClassHosted pools run instances on our own hypervisor hosts.
	ClassHosted = "vps-host"
	// ClassProvider pools create instances on an external cloud through a
	// provider account.
	ClassProvider = "provider"
)

// Defaults that several processes must agree on.
const (
	// DefaultRedisPrefix starts every Redis key and channel.
	DefaultRedisPrefix = "bc:"
	// DefaultHostSilentAfter is how long a host may go without reporting
	// before its instances are LOST.
	DefaultHostSilentAfter = 30 * time.Second
	// DefaultCertifiedMargin is how long a host's certificate must still
	// be valid for a pool that requires certified hosts to place on it,
	// and how soon before its expiry the doctor warns.
	DefaultCertifiedMargin = 24 * time.Hour
)

// Runtimes a hosted pool's hosts may run, by the name a deployment lists in
// BC_RUNTIMES, a pool names and a host daemon says it runs.
const (
	// RuntimeLibvirtKVM runs each guest in its own KVM virtual machine
	// through libvirtd.
	RuntimeLibvirtKVM = "libvirt-kvm"
	// RuntimeFake simulates a hypervisor in the host daemon's process.
	RuntimeFake = "fake"
)

// Runtime is what the control plane knows of a runtime.
type Runtime struct {
	// Name is its name, such as RuntimeLibvirtKVM.
	Name string
	// SharedKernel says its guests share the host's kernel (a container
	// runtime): a pool of it must be single-tenant.
	SharedKernel bool
}

// Runtimes are the runtimes this build knows.
var Runtimes = []Runtime{
	{Name: RuntimeLibvirtKVM},
	{Name: RuntimeFake},
}

// LookupRuntime finds a known runtime by name.
func LookupRuntime(name string) (Runtime, bool) {
	for _, r := range Runtimes {
		if r.Name == name {
			return r, true
		}
	}
	return Runtime{}, false
}

// DefaultRuntimes is the default list of runtimes a deployment runs.
func DefaultRuntimes() []string { return []string{RuntimeLibvirtKVM} }
