package reconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/lifecycle"
	"github.com/better-compute/vps/sqlc"
)

const (
	// rebootGrace is how long a rebooting guest has to shut down before
	// its host destroys it and starts it again.
	rebootGrace = 30 * time.Second
	// rebootTimeout is how long a host has to reboot an instance; past it
	// the instance is RUNNING again with the failure as its reason.
	rebootTimeout = 5 * time.Minute
)

// rebootFacts records, for a REBOOTING instance, whether its reboot
// command is queued and how it ended.
func rebootFacts(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance, f *facts) error {
	if f.state != lifecycle.Rebooting || inst.RebootCommandID == nil {
		return nil
	}
	cmd, err := q.HostCommand(ctx, *inst.RebootCommandID)
	if err != nil {
		return fmt.Errorf("read its reboot command: %w", err)
	}
	f.rebootQueued, f.rebootEnded = true, commandFinal(cmd)
	if cmd.State == "FAILED" {
		f.rebootError = cmd.Error
	}
	return nil
}

// queueReboot queues the host command that reboots a REBOOTING instance
// and returns the row that records it. A host too old for commands
// cannot reboot it: the instance is RUNNING again, with that as its
// reason.
func (r *Reconciler) queueReboot(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance, addrs *addresses, out *events.Outbox, wake *[]uuid.UUID) (sqlc.Instance, error) {
	cmd, err := queueCommand(ctx, q, command{
		host: *inst.HostID, kind: hostproto.KindInstanceReboot, lane: hostproto.LaneInteractive, timeout: rebootTimeout,
		payload: hostproto.RebootPayload{InstanceID: ids.Encode(ids.Instance, inst.ID), GraceSeconds: int(rebootGrace.Seconds())},
	}, wake)
	var old *hostTooOldError
	if errors.As(err, &old) {
		return r.apply(ctx, q, inst, step{to: lifecycle.Running, reason: "reboot failed: " + old.Error()}, addrs, out, wake)
	}
	if err != nil {
		return sqlc.Instance{}, err
	}
	row, err := q.SetRebootCommand(ctx, sqlc.SetRebootCommandParams{ID: inst.ID, CommandID: &cmd.ID, Version: inst.Version})
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlc.Instance{}, errRace
	}
	if err != nil {
		return sqlc.Instance{}, fmt.Errorf("record reboot command: %w", err)
	}
	return row, nil
}

// settleReboot hands the instance an ended reboot command was for back to
// vps.instances, which makes it RUNNING again.
func (r *Reconciler) settleReboot(ctx context.Context, cmd sqlc.HostCommand) error {
	q := sqlc.New(r.db)
	rebooted, err := q.RebootedBy(ctx, &cmd.ID)
	if err != nil {
		return fmt.Errorf("find its instance: %w", err)
	}
	return events.Wake(ctx, q, rebooted)
}
