package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// reasonDeadline is a snapshot's reason when its command's deadline passed
// and the command carries no error of its own.
const reasonDeadline = "deadline passed"

// settleBatch bounds the commands one pass of the sandbox loop settles.
const settleBatch = 500

// commands is the vps.commands kind (a key is a host command's ID, woken
// when the command ends): it settles what the command was for, by its
// kind. Settling is idempotent: a settled snapshot is left as it is.
type commands struct{ r *Reconciler }

// Reconcile settles the command req names.
func (k *commands) Reconcile(ctx context.Context, req Request) (Result, error) {
	id, err := uuid.Parse(req.Key)
	if err != nil {
		return Result{}, Terminal(fmt.Errorf("command id %q: %w", req.Key, err))
	}
	return Result{}, k.r.settleCommand(ctx, id)
}

// settleCommand settles what an ended command was for: an
// instance.snapshot's snapshot (READY or FAILED), a snapshot.purge's
// (purged, or its purge queued again), an instance.reboot's instance.
func (r *Reconciler) settleCommand(ctx context.Context, id uuid.UUID) error {
	cmd, err := sqlc.New(r.db).HostCommand(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read command %s: %w", ids.Log(ids.HostCommand, id), err)
	}
	if !commandFinal(cmd) {
		return nil // its end wakes it again
	}
	switch cmd.Kind {
	case hostproto.KindInstanceSnapshot:
		err = r.settleTake(ctx, cmd)
	case hostproto.KindSnapshotPurge:
		err = r.settlePurge(ctx, cmd)
	case hostproto.KindInstanceReboot:
		err = r.settleReboot(ctx, cmd)
	}
	if err != nil {
		return fmt.Errorf("settle %s command %s: %w", cmd.Kind, ids.Log(ids.HostCommand, id), err)
	}
	return nil
}

// settleTake settles the snapshot an ended instance.snapshot took: READY
// with its size and sha256 when the tenant's snapshot quota holds its
// bytes, else FAILED with the reason. It locks the tenant, then the
// snapshot, as the API's quota checks do. A FAILED (or deleted) snapshot
// is handed back to vps.snapshots, to purge what the host kept.
func (r *Reconciler) settleTake(ctx context.Context, cmd sqlc.HostCommand) error {
	found, err := sqlc.New(r.db).SnapshotByCommand(ctx, &cmd.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("find its snapshot: %w", err)
	}
	return pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		if err := q.LockTenantRow(ctx, found.TenantID); err != nil {
			return fmt.Errorf("lock tenant: %w", err)
		}
		snap, err := q.LockSandboxSnapshot(ctx, found.ID)
		if err != nil {
			return fmt.Errorf("lock snapshot: %w", err)
		}
		if snap.State != domain.SnapshotPending {
			return nil // settled before
		}
		settle, err := outcome(ctx, q, snap, cmd)
		if err != nil {
			return err
		}
		if _, err := q.SettleSnapshot(ctx, settle); err != nil {
			return fmt.Errorf("settle snapshot: %w", err)
		}
		if settle.State == domain.SnapshotFailed || snap.DeletedAt != nil {
			return q.InsertOutbox(ctx, sqlc.InsertOutboxParams{Topic: vps.TopicSnapshots, Key: snap.ID})
		}
		return nil
	})
}

// outcome is how a snapshot settles by its ended take command.
func outcome(ctx context.Context, q *sqlc.Queries, snap sqlc.SandboxSnapshot, cmd sqlc.HostCommand) (sqlc.SettleSnapshotParams, error) {
	failed := func(reason string) (sqlc.SettleSnapshotParams, error) {
		return sqlc.SettleSnapshotParams{ID: snap.ID, State: domain.SnapshotFailed, StateReason: reason}, nil
	}
	if cmd.State != "SUCCEEDED" {
		switch {
		case cmd.Error != "":
			return failed(cmd.Error)
		case cmd.AbandonedAt != nil:
			return failed(reasonDeadline)
		}
		return failed("the host failed to take it")
	}
	var res hostproto.SnapshotResult
	if err := json.Unmarshal(cmd.Result, &res); err != nil || res.SizeBytes < 0 || res.SHA256 == "" {
		return failed(fmt.Sprintf("the host's result is not a snapshot's: %s", cmd.Result))
	}
	if snap.DeletedAt == nil {
		over, err := overSnapshotBytes(ctx, q, snap.TenantID, res.SizeBytes)
		if err != nil {
			return sqlc.SettleSnapshotParams{}, err
		}
		if over != "" {
			return failed(over)
		}
	}
	ready := sqlc.SettleSnapshotParams{ID: snap.ID, State: domain.SnapshotReady, SizeBytes: &res.SizeBytes, Sha256: &res.SHA256}
	var err error
	if ready.HostCertified, ready.HostCertValidBefore, err = takerCertification(ctx, q, snap); err != nil {
		return sqlc.SettleSnapshotParams{}, err
	}
	return ready, nil
}

// takerCertification is whether the host that took a snapshot is
// certified, until when, as the instance it was taken from records it now
// (the host's reports keep it current, the report that ended the take
// among them); not certified when that instance left the host.
func takerCertification(ctx context.Context, q *sqlc.Queries, snap sqlc.SandboxSnapshot) (bool, *time.Time, error) {
	if snap.PrincipalInstanceID == nil || snap.HostID == nil {
		return false, nil, nil
	}
	inst, err := q.GetInstance(ctx, *snap.PrincipalInstanceID)
	if err != nil {
		return false, nil, fmt.Errorf("read the instance it was taken from: %w", err)
	}
	if inst.HostID == nil || *inst.HostID != *snap.HostID || !inst.HostCertified {
		return false, nil, nil
	}
	return true, inst.HostCertValidBefore, nil
}

// overSnapshotBytes says why size more bytes would exceed a tenant's
// snapshot quota, or "" when they fit.
func overSnapshotBytes(ctx context.Context, q *sqlc.Queries, tenant uuid.UUID, size int64) (string, error) {
	quota, err := q.GetQuota(ctx, tenant)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && quota.MaxSnapshotBytes == nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read quota: %w", err)
	}
	usage, err := q.SnapshotUsage(ctx, tenant)
	if err != nil {
		return "", fmt.Errorf("count snapshots: %w", err)
	}
	if usage.Bytes+size > *quota.MaxSnapshotBytes {
		return fmt.Sprintf("over the snapshot quota: its %d bytes and the %d of the tenant's READY snapshots exceed the limit of %d",
			size, usage.Bytes, *quota.MaxSnapshotBytes), nil
	}
	return "", nil
}

// settlePurge marks a snapshot purged once its host confirmed the purge;
// a failed purge is forgotten, so the sandbox loop queues another.
func (r *Reconciler) settlePurge(ctx context.Context, cmd sqlc.HostCommand) error {
	return pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		snap, err := q.SnapshotByPurgeCommand(ctx, &cmd.ID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock its snapshot: %w", err)
		}
		switch {
		case snap.Purged:
			return nil
		case cmd.State == "SUCCEEDED":
			return q.MarkSnapshotPurged(ctx, snap.ID)
		}
		r.log.WarnContext(ctx, "snapshot purge failed; the sandbox loop queues another", "snapshot", ids.Log(ids.SandboxSnapshot, snap.ID), "err", cmd.Error)
		return q.SetSnapshotPurgeCommand(ctx, sqlc.SetSnapshotPurgeCommandParams{ID: snap.ID})
	})
}

// settleSnapshots is the sandbox loop's part for snapshots: it settles
// what ended commands were for whose wake was lost, and steps the
// snapshots still wanting a command (their wake lost, or their host back).
func (r *Reconciler) settleSnapshots(ctx context.Context) error {
	q := sqlc.New(r.db)
	ended, err := q.UnsettledCommands(ctx, settleBatch)
	if err != nil {
		return fmt.Errorf("list unsettled commands: %w", err)
	}
	for _, id := range ended {
		if err := r.settleCommand(ctx, id); err != nil {
			return err
		}
	}
	wanted, err := q.SnapshotsWanted(ctx, settleBatch)
	if err != nil {
		return fmt.Errorf("list snapshots wanting a command: %w", err)
	}
	for _, id := range wanted {
		if err := r.snapshotStep(ctx, id); err != nil {
			return err
		}
	}
	return nil
}
