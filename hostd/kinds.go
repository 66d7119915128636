package hostd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/better-compute/vps/hostproto"
)

// kind is what the daemon does for a command kind: run does the work and
// returns its result; undo removes what run made, whether it finished or
// not, for an abandoned or timed-out command. Both are idempotent, so a
// daemon that restarted may call them again.
type kind struct {
	run  func(ctx context.Context, rt Runtime, payload json.RawMessage) (json.RawMessage, error)
	undo func(ctx context.Context, rt Runtime, payload json.RawMessage) error
}

// kinds are the command kinds the daemon runs; a command of another kind
// fails.
var kinds = map[string]kind{
	hostproto.KindInstanceSnapshot: {run: runSnapshot, undo: undoSnapshot},
	hostproto.KindSnapshotPurge:    {run: runPurge, undo: noUndo},
	hostproto.KindInstanceReboot:   {run: runReboot, undo: noUndo},
}

// noUndo is the undo of a kind that makes nothing.
func noUndo(context.Context, Runtime, json.RawMessage) error { return nil }

func runSnapshot(ctx context.Context, rt Runtime, payload json.RawMessage) (json.RawMessage, error) {
	var p hostproto.SnapshotPayload
	if err := decodePayload(payload, &p); err != nil {
		return nil, err
	}
	if p.InstanceID == "" || p.SnapshotID == "" {
		return nil, errors.New("bad payload: instanceId and snapshotId are required")
	}
	res, err := rt.Snapshot(ctx, p.InstanceID, p.SnapshotID)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// undoSnapshot purges the command's snapshot, complete or partial.
func undoSnapshot(ctx context.Context, rt Runtime, payload json.RawMessage) error {
	var p hostproto.SnapshotPayload
	if decodePayload(payload, &p) != nil || p.SnapshotID == "" {
		return nil // it made nothing
	}
	return rt.PurgeSnapshot(ctx, p.SnapshotID)
}

func runPurge(ctx context.Context, rt Runtime, payload json.RawMessage) (json.RawMessage, error) {
	var p hostproto.PurgePayload
	if err := decodePayload(payload, &p); err != nil {
		return nil, err
	}
	if p.SnapshotID == "" {
		return nil, errors.New("bad payload: snapshotId is required")
	}
	return nil, rt.PurgeSnapshot(ctx, p.SnapshotID)
}

// runReboot shuts the instance's guest down, within its grace, and starts
// it again. A reboot run again after the daemon restarted reboots again.
func runReboot(ctx context.Context, rt Runtime, payload json.RawMessage) (json.RawMessage, error) {
	var p hostproto.RebootPayload
	if err := decodePayload(payload, &p); err != nil {
		return nil, err
	}
	if p.InstanceID == "" || p.GraceSeconds <= 0 {
		return nil, errors.New("bad payload: instanceId and a positive graceSeconds are required")
	}
	if err := rt.Shutdown(ctx, p.InstanceID, time.Duration(p.GraceSeconds)*time.Second); err != nil {
		return nil, fmt.Errorf("reboot: %w", err)
	}
	if err := rt.Start(ctx, p.InstanceID); err != nil {
		return nil, fmt.Errorf("reboot: %w", err)
	}
	return nil, nil
}

func decodePayload(payload json.RawMessage, v any) error {
	if err := json.Unmarshal(payload, v); err != nil {
		return fmt.Errorf("bad payload: %w", err)
	}
	return nil
}
