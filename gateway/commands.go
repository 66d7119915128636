package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// The states of host_commands.state.
const (
	commandRunning   = "RUNNING"
	commandSucceeded = "SUCCEEDED"
	commandFailed    = "FAILED"
)

// errorAbandonedByHost is a command's error when its host reports it
// abandoned without having been told to.
const errorAbandonedByHost = "the host abandoned it"

// specCommands reads a host's open commands for its spec, oldest first:
// those it has not acknowledged, abandon set on those the control plane
// failed.
func specCommands(ctx context.Context, q *sqlc.Queries, host uuid.UUID) ([]hostproto.Command, error) {
	rows, err := q.SpecCommands(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("read commands: %w", err)
	}
	cmds := make([]hostproto.Command, len(rows))
	for i, c := range rows {
		cmds[i] = hostproto.Command{
			ID: ids.Encode(ids.HostCommand, c.ID), Kind: c.Kind, Lane: hostproto.Lane(c.Lane),
			Deadline: c.Deadline, Attempt: int(c.Attempt), Abandon: c.AbandonedAt != nil, Payload: c.Payload,
		}
	}
	return cmds, nil
}

// recordCommands records, in q's transaction, the statuses a report gives
// of its host's commands, and says whether one was acknowledged: the
// caller then bumps the host's spec generation, so it leaves the spec. A
// status of a command that is not the host's, or no command at all, is
// ignored, and logged once.
func (g *Gateway) recordCommands(ctx context.Context, q *sqlc.Queries, host sqlc.Host, statuses []hostproto.CommandStatus) (acknowledged bool, err error) {
	decoded := make([]uuid.UUID, 0, len(statuses))
	for _, st := range statuses {
		if id, ok := ids.Decode(ids.HostCommand, st.ID); ok {
			decoded = append(decoded, id)
		}
	}
	var rows []sqlc.HostCommand
	if len(decoded) > 0 {
		if rows, err = q.LockReportedCommands(ctx, sqlc.LockReportedCommandsParams{HostID: host.ID, Ids: decoded}); err != nil {
			return false, fmt.Errorf("lock reported commands: %w", err)
		}
	}
	byID := make(map[string]sqlc.HostCommand, len(rows))
	for _, c := range rows {
		byID[ids.Encode(ids.HostCommand, c.ID)] = c
	}
	var unknown []string
	for _, st := range statuses {
		cmd, ok := byID[st.ID]
		if !ok {
			unknown = append(unknown, st.ID)
			continue
		}
		ack, err := recordCommand(ctx, q, cmd, st)
		if err != nil {
			return false, fmt.Errorf("record command %s: %w", st.ID, err)
		}
		acknowledged = acknowledged || ack
	}
	g.noteUnknownCommands(ctx, host, unknown)
	return acknowledged, nil
}

// recordCommand records one status of a command and says whether it
// acknowledged the command. A final state is never overwritten; a command
// the control plane abandoned waits for the host to report it abandoned,
// whatever else it reports; one already acknowledged is left alone (the
// host reports it until it sees the spec without it).
func recordCommand(ctx context.Context, q *sqlc.Queries, cmd sqlc.HostCommand, st hostproto.CommandStatus) (acknowledged bool, err error) {
	if cmd.AcknowledgedAt != nil {
		return false, nil
	}
	final := cmd.State == commandSucceeded || cmd.State == commandFailed
	switch {
	case st.State == hostproto.CommandRunning:
		if final {
			return false, nil
		}
		if err := q.StartCommand(ctx, sqlc.StartCommandParams{ID: cmd.ID, Progress: int32(st.Progress)}); err != nil {
			return false, fmt.Errorf("record running: %w", err)
		}
		return false, nil
	case cmd.AbandonedAt != nil:
		if st.State != hostproto.CommandAbandoned {
			return false, nil
		}
		return true, acknowledge(ctx, q, cmd.ID)
	case final:
		return true, acknowledge(ctx, q, cmd.ID)
	}
	p := sqlc.FinishCommandParams{ID: cmd.ID}
	switch st.State {
	case hostproto.CommandSucceeded:
		p.State, p.Result = commandSucceeded, st.Result
	case hostproto.CommandFailed:
		p.State, p.Error = commandFailed, st.Error
	default: // abandoned, though it was not told to: it will not run it
		p.State, p.Error = commandFailed, errorAbandonedByHost
	}
	if err := q.FinishCommand(ctx, p); err != nil {
		return false, fmt.Errorf("record its end: %w", err)
	}
	return true, events.CommandEnded(ctx, q, cmd.ID)
}

func acknowledge(ctx context.Context, q *sqlc.Queries, id uuid.UUID) error {
	if err := q.AcknowledgeCommand(ctx, id); err != nil {
		return fmt.Errorf("acknowledge: %w", err)
	}
	return nil
}

// noteUnknownCommands logs the statuses of commands a host reports that
// are not its own, once for each set, not on every report.
func (g *Gateway) noteUnknownCommands(ctx context.Context, host sqlc.Host, unknown []string) {
	if len(unknown) == 0 {
		g.unknownCommands.Delete(host.ID)
		return
	}
	slices.Sort(unknown)
	list := strings.Join(unknown, ", ")
	if prev, loaded := g.unknownCommands.Swap(host.ID, list); loaded && prev == list {
		return
	}
	g.log.WarnContext(ctx, "a host reported commands it was not given; ignored", "host", host.Name, "commands", list)
}

// wakeHost tells every serve process that a host's spec changed, once the
// transaction that changed it committed. A lost message only delays the
// host until its long-poll times out.
func (g *Gateway) wakeHost(ctx context.Context, host uuid.UUID) {
	if err := g.cfg.Redis.Publish(ctx, g.cfg.Prefix+events.HostChannel(host), "").Err(); err != nil {
		g.log.WarnContext(ctx, "wake host", "host", host, "err", err)
	}
}
