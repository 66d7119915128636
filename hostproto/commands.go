package hostproto

import (
	"encoding/json"
	"time"
)

// Lane is the queue a command runs in on its host. Each lane has its own
// concurrency, so an hour-long bulk command never delays an interactive
// one.
type Lane string

// The lanes.
const (
	LaneInteractive Lane = "interactive"
	LaneBulk        Lane = "bulk"
)

// Command kinds.
const (
	// KindInstanceSnapshot snapshots a running instance's disk without
	// stopping it. Payload SnapshotPayload; result SnapshotResult. Lane
	// bulk, timeout 1 hour.
	KindInstanceSnapshot = "instance.snapshot"
	// KindSnapshotPurge removes a snapshot's files from the host's store.
	// Payload PurgePayload; no result. Lane interactive. Purging a
	// snapshot the host does not have succeeds.
	KindSnapshotPurge = "snapshot.purge"
	// KindInstanceReboot reboots a running instance: its guest is asked
	// to shut down, destroyed if it has not within the payload's grace,
	// and started again. Payload RebootPayload; no result. Lane
	// interactive.
	KindInstanceReboot = "instance.reboot"
)

// Command is a one-off action the control plane asks of a host (since
// version 3). It is in the NodeSpec from when it is queued until the host
// reports it finished (or, once abandoned, finished or abandoned). A host
// runs a command at most once by its ID, whatever it restarts, and reports
// it in every report until the command leaves the spec.
type Command struct {
	// ID is the command's API ID (cmd_…); commands are idempotent by it.
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Lane Lane   `json:"lane"`
	// Deadline is when the control plane fails the command if the host
	// has not finished it.
	Deadline time.Time `json:"deadline"`
	// Attempt counts the times the control plane queued this command's
	// work (1 for the first).
	Attempt int `json:"attempt"`
	// Abandon tells the host to stop the command if it runs, clean up what
	// it made, and report it abandoned; the control plane failed it (its
	// deadline passed) and will not use its result.
	Abandon bool            `json:"abandon,omitempty"`
	Payload json.RawMessage `json:"payload"`
}

// CommandState is what a host says of a command.
type CommandState string

// The command states. Succeeded, failed and abandoned are final: a host
// never reports another state of that command afterwards.
const (
	CommandRunning   CommandState = "running"
	CommandSucceeded CommandState = "succeeded"
	CommandFailed    CommandState = "failed"
	CommandAbandoned CommandState = "abandoned"
)

// CommandStatus is one command as the host last saw it.
type CommandStatus struct {
	ID    string       `json:"id"`
	State CommandState `json:"state"`
	// Progress is the share done, 0 to 100, while running.
	Progress int `json:"progress,omitempty"`
	// Result is the kind's result, when succeeded.
	Result json.RawMessage `json:"result,omitempty"`
	// Error says why, when failed.
	Error string `json:"error,omitempty"`
}

// SnapshotPayload is an instance.snapshot command's payload.
type SnapshotPayload struct {
	InstanceID string `json:"instanceId"`
	// SnapshotID names the snapshot in the host's store (snp_…).
	SnapshotID string `json:"snapshotId"`
}

// SnapshotResult is a succeeded instance.snapshot's result.
type SnapshotResult struct {
	SizeBytes int64  `json:"sizeBytes"`
	SHA256    string `json:"sha256"`
}

// PurgePayload is a snapshot.purge command's payload.
type PurgePayload struct {
	SnapshotID string `json:"snapshotId"`
}

// RebootPayload is an instance.reboot command's payload.
type RebootPayload struct {
	InstanceID string `json:"instanceId"`
	// GraceSeconds is how long the guest has to shut down before it is
	// destroyed.
	GraceSeconds int `json:"graceSeconds"`
}
