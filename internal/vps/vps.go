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
)
