package reconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// purgeTimeout is how long a host has to purge a snapshot's files. A
// purge that fails is queued again by the sandbox loop.
const purgeTimeout = 10 * time.Minute

// snapshots is the vps.snapshots kind (a key is a sandbox snapshot's ID):
// it queues a PENDING snapshot's instance.snapshot command on its host,
// and a deleted or FAILED snapshot's snapshot.purge once its take ended.
type snapshots struct{ r *Reconciler }

// Reconcile queues what the snapshot req names wants, if anything.
func (k *snapshots) Reconcile(ctx context.Context, req Request) (Result, error) {
	id, err := uuid.Parse(req.Key)
	if err != nil {
		return Result{}, Terminal(fmt.Errorf("snapshot id %q: %w", req.Key, err))
	}
	return Result{}, k.r.snapshotStep(ctx, id)
}

// snapshotStep queues a snapshot's take or its purge, once: under the
// snapshot's row lock, the command's ID is recorded in the transaction
// that queues it, so a second reconciler finds it queued and does nothing.
func (r *Reconciler) snapshotStep(ctx context.Context, id uuid.UUID) error {
	var wake []uuid.UUID
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		snap, err := q.LockSandboxSnapshot(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock snapshot: %w", err)
		}
		switch {
		case snap.State == domain.SnapshotPending && snap.CommandID == nil:
			return r.take(ctx, q, snap, &wake)
		case (snap.DeletedAt != nil || snap.State == domain.SnapshotFailed) && !snap.Purged && snap.PurgeCommandID == nil:
			return r.purge(ctx, q, snap, &wake)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", ids.Log(ids.SandboxSnapshot, id), err)
	}
	r.wakeHosts(ctx, wake)
	return nil
}

// take queues a PENDING snapshot's instance.snapshot command, or fails it
// when it cannot be taken: deleted first, or its host gone or too old
// (queueCommand's refusal). Such a snapshot has nothing on its host: it is
// purged at once.
func (r *Reconciler) take(ctx context.Context, q *sqlc.Queries, snap sqlc.SandboxSnapshot, wake *[]uuid.UUID) error {
	reason := ""
	if snap.DeletedAt != nil {
		reason = "deleted before it was taken"
	} else {
		var err error
		if reason, err = r.hostGone(ctx, q, snap.HostID); err != nil {
			return err
		}
	}
	if reason == "" {
		cmd, err := queueCommand(ctx, q, command{
			host: *snap.HostID, kind: hostproto.KindInstanceSnapshot, lane: hostproto.LaneBulk, timeout: r.cfg.SnapshotTimeout,
			payload: hostproto.SnapshotPayload{
				InstanceID: ids.Encode(ids.Instance, *snap.PrincipalInstanceID),
				SnapshotID: ids.Encode(ids.SandboxSnapshot, snap.ID),
			},
		}, wake)
		var old *hostTooOldError
		switch {
		case errors.As(err, &old):
			reason = old.Error()
		case err != nil:
			return err
		default:
			if err := q.SetSnapshotCommand(ctx, sqlc.SetSnapshotCommandParams{ID: snap.ID, CommandID: &cmd.ID}); err != nil {
				return fmt.Errorf("record the snapshot's command: %w", err)
			}
			return nil
		}
	}
	if _, err := q.SettleSnapshot(ctx, sqlc.SettleSnapshotParams{ID: snap.ID, State: domain.SnapshotFailed, StateReason: reason}); err != nil {
		return fmt.Errorf("fail snapshot: %w", err)
	}
	if err := q.MarkSnapshotPurged(ctx, snap.ID); err != nil {
		return fmt.Errorf("mark snapshot purged: %w", err)
	}
	r.log.InfoContext(ctx, "snapshot not taken", "snapshot", ids.Log(ids.SandboxSnapshot, snap.ID), "reason", reason)
	return nil
}

// hostGone says why a snapshot's host cannot take a command now: it has
// none, or it is silent past HostSilentAfter; "" when it can.
func (r *Reconciler) hostGone(ctx context.Context, q *sqlc.Queries, host *uuid.UUID) (string, error) {
	if host == nil {
		return "the sandbox had no host", nil
	}
	h, err := q.GetHost(ctx, *host)
	if err != nil {
		return "", fmt.Errorf("read host: %w", err)
	}
	if h.LastSeenAt == nil || time.Since(*h.LastSeenAt) > r.cfg.HostSilentAfter {
		return fmt.Sprintf("host %s is gone (silent for longer than %v)", h.Name, r.cfg.HostSilentAfter), nil
	}
	return "", nil
}

// purge queues the snapshot.purge of a deleted or FAILED snapshot once its
// take has ended; one never taken is purged at once. It goes to the host
// purgeHost picks; with none, or one too old, the snapshot is left alone:
// the sandbox loop looks again each interval.
func (r *Reconciler) purge(ctx context.Context, q *sqlc.Queries, snap sqlc.SandboxSnapshot, wake *[]uuid.UUID) error {
	if snap.CommandID == nil {
		if err := q.MarkSnapshotPurged(ctx, snap.ID); err != nil {
			return fmt.Errorf("mark snapshot purged: %w", err)
		}
		return nil
	}
	taking, err := q.HostCommand(ctx, *snap.CommandID)
	if err != nil {
		return fmt.Errorf("read the snapshot's command: %w", err)
	}
	if !commandFinal(taking) {
		return nil // settling the take wakes this again
	}
	host, err := r.purgeHost(ctx, q, snap)
	if err != nil || host == nil {
		return err
	}
	cmd, err := queueCommand(ctx, q, command{
		host: *host, kind: hostproto.KindSnapshotPurge, lane: hostproto.LaneInteractive, timeout: purgeTimeout,
		payload: hostproto.PurgePayload{SnapshotID: ids.Encode(ids.SandboxSnapshot, snap.ID)},
	}, wake)
	if old := (*hostTooOldError)(nil); errors.As(err, &old) {
		return nil // a downgraded host: purged once it speaks commands again
	}
	if err != nil {
		return err
	}
	if err := q.SetSnapshotPurgeCommand(ctx, sqlc.SetSnapshotPurgeCommandParams{ID: snap.ID, PurgeCommandID: &cmd.ID}); err != nil {
		return fmt.Errorf("record the snapshot's purge: %w", err)
	}
	return nil
}

// purgeHost returns the host to purge a snapshot's files on: its own
// while it is live; when it is gone and its pool's hosts share one
// snapshot store, another live host of the pool that speaks commands
// (the files are in the store they share, and a host gone for good would
// otherwise leave them there); else nil.
func (r *Reconciler) purgeHost(ctx context.Context, q *sqlc.Queries, snap sqlc.SandboxSnapshot) (*uuid.UUID, error) {
	reason, err := r.hostGone(ctx, q, snap.HostID)
	switch {
	case err != nil:
		return nil, err
	case reason == "":
		return snap.HostID, nil
	case snap.HostID == nil:
		return nil, nil
	}
	own, err := q.GetHost(ctx, *snap.HostID)
	if err != nil {
		return nil, fmt.Errorf("read host: %w", err)
	}
	other, err := q.SharedStoreHost(ctx, sqlc.SharedStoreHostParams{
		Pool: own.PoolID, OtherThan: own.ID, Protocol: hostproto.CommandsVersion, SilentAfter: r.cfg.HostSilentAfter.Seconds(),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find a host sharing the snapshot store of %s: %w", own.Name, err)
	}
	return &other, nil
}

// commandFinal reports whether a command ended: the host reported its end,
// or the control plane failed it at its deadline.
func commandFinal(c sqlc.HostCommand) bool {
	return c.State == "SUCCEEDED" || c.State == "FAILED"
}
