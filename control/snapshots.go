package control

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// CreateSandboxSnapshot records a snapshot of a RUNNING sandbox's disk, to
// be taken on its instance's host: PENDING until the host reports it. The
// vps.snapshots reconciler queues the host's command. A live snapshot
// counts against its tenant's snapshot quota.
func (s *Service) CreateSandboxSnapshot(ctx context.Context, sandbox uuid.UUID, name string) (domain.SandboxSnapshot, error) {
	var out domain.SandboxSnapshot
	err := s.mutate(ctx, ActCreateSandboxSnapshot, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		p, err := caller(ctx)
		if err != nil {
			return err
		}
		if err := checkName("name", name); err != nil {
			return err
		}
		sbx, err := q.GetSandbox(ctx, sandbox)
		if err != nil {
			return notFound(err, "sandboxId", "sandbox")
		}
		if !p.CanSee(sbx.TenantID) {
			return apierr.NotFoundf("sandboxId", "sandbox not found")
		}
		ev.TenantID = sbx.TenantID
		// The tenant's lock serializes the quota and the name; then the
		// sandbox and its instance, as the sandbox's mutations lock them.
		if _, err := q.LockTenant(ctx, sbx.TenantID); err != nil {
			return notFound(err, "sandboxId", "sandbox")
		}
		if _, err := q.LockSandbox(ctx, sandbox); err != nil {
			return fmt.Errorf("lock sandbox: %w", err)
		}
		inst, err := q.LockSandboxInstance(ctx, &sandbox)
		if err != nil {
			return fmt.Errorf("lock the sandbox's instance: %w", err)
		}
		if sbx, err = q.GetSandbox(ctx, sandbox); err != nil {
			return fmt.Errorf("read sandbox: %w", err)
		}
		if sbx.State != domain.SandboxRunning || inst.HostID == nil {
			return apierr.New(apierr.FailedPrecondition, "sandbox is %s; only a RUNNING sandbox can be snapshotted", sbx.State)
		}
		taken, err := q.SnapshotNameTaken(ctx, sqlc.SnapshotNameTakenParams{Tenant: sbx.TenantID, Name: name})
		if err != nil {
			return fmt.Errorf("check snapshot name: %w", err)
		}
		if taken {
			return &apierr.Error{Code: apierr.Conflict, Field: "name", Message: fmt.Sprintf("a sandbox snapshot named %s exists", name)}
		}
		if err := checkSnapshotQuota(ctx, q, sbx.TenantID); err != nil {
			return err
		}
		row, err := q.InsertSandboxSnapshot(ctx, sqlc.InsertSandboxSnapshotParams{
			ID: ids.New(), TenantID: sbx.TenantID, SandboxID: sandbox, TemplateID: sbx.TemplateID, Name: name,
			HostID: inst.HostID, PrincipalInstanceID: &inst.ID,
		})
		if err != nil {
			return fmt.Errorf("insert snapshot: %w", err)
		}
		if err := wakeSnapshot(ctx, q, row.ID); err != nil {
			return err
		}
		ev.TargetID = row.ID
		ev.Details = map[string]any{"sandboxId": ids.Encode(ids.Sandbox, sandbox), "name": name,
			"instanceId": ids.Encode(ids.Instance, inst.ID), "hostId": ids.Encode(ids.Host, *inst.HostID)}
		out = domain.SandboxSnapshotFromRow(row)
		return nil
	})
	if err != nil {
		return domain.SandboxSnapshot{}, err
	}
	return out, nil
}

// checkSnapshotQuota refuses one more snapshot of a tenant, whose lock the
// caller holds, when its live snapshots are at their limit or its READY
// ones hold every byte it may keep.
func checkSnapshotQuota(ctx context.Context, q *sqlc.Queries, tenant uuid.UUID) error {
	quota, err := q.GetQuota(ctx, tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read quota: %w", err)
	}
	usage, err := q.SnapshotUsage(ctx, tenant)
	if err != nil {
		return fmt.Errorf("count snapshots: %w", err)
	}
	switch {
	case quota.MaxSnapshots != nil && usage.Snapshots+1 > *quota.MaxSnapshots:
		return apierr.Quota("snapshots", int64(*quota.MaxSnapshots))
	case quota.MaxSnapshotBytes != nil && usage.Bytes >= *quota.MaxSnapshotBytes:
		return apierr.Quota("snapshotBytes", *quota.MaxSnapshotBytes)
	}
	return nil
}

// wakeSnapshot asks the vps.snapshots reconciler, in the transaction of q,
// to look at a snapshot: to queue its take or its purge.
func wakeSnapshot(ctx context.Context, q *sqlc.Queries, id uuid.UUID) error {
	if err := q.InsertOutbox(ctx, sqlc.InsertOutboxParams{Topic: vps.TopicSnapshots, Key: id}); err != nil {
		return fmt.Errorf("wake the reconciler of snapshot %s: %w", id, err)
	}
	return nil
}

// DeleteSandboxSnapshot hides a snapshot at once; the reconciler purges
// its files from its host once its take has ended. Sandboxes restored from
// it live on.
func (s *Service) DeleteSandboxSnapshot(ctx context.Context, id uuid.UUID) (domain.SandboxSnapshot, error) {
	var out domain.SandboxSnapshot
	err := s.mutate(ctx, ActDeleteSandboxSnapshot, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		ev.TargetID = id
		p, err := caller(ctx)
		if err != nil {
			return err
		}
		cur, err := q.LockSandboxSnapshot(ctx, id)
		if err != nil {
			return notFound(err, "id", "sandbox snapshot")
		}
		if cur.DeletedAt != nil || !p.CanSee(cur.TenantID) {
			return apierr.NotFoundf("id", "sandbox snapshot not found")
		}
		ev.TenantID = cur.TenantID
		row, err := q.DeleteSandboxSnapshot(ctx, id)
		if err != nil {
			return fmt.Errorf("delete snapshot: %w", err)
		}
		ev.Details = map[string]any{"name": row.Name, "state": row.State}
		out = domain.SandboxSnapshotFromRow(row)
		return wakeSnapshot(ctx, q, id)
	})
	if err != nil {
		return domain.SandboxSnapshot{}, err
	}
	return out, nil
}

// SandboxSnapshot returns a live snapshot the caller may see.
func (s *Service) SandboxSnapshot(ctx context.Context, id uuid.UUID) (domain.SandboxSnapshot, error) {
	p, err := caller(ctx)
	if err != nil {
		return domain.SandboxSnapshot{}, err
	}
	row, err := s.q.GetSandboxSnapshot(ctx, id)
	if err != nil {
		return domain.SandboxSnapshot{}, notFound(err, "id", "sandbox snapshot")
	}
	if row.DeletedAt != nil || !p.CanSee(row.TenantID) {
		return domain.SandboxSnapshot{}, apierr.NotFoundf("id", "sandbox snapshot not found")
	}
	return domain.SandboxSnapshotFromRow(row), nil
}

// SnapshotFilter narrows a list of snapshots; zero fields do not filter.
type SnapshotFilter struct {
	SandboxID *uuid.UUID
	// State is one of the domain.Snapshot… states.
	State *string
}

// SandboxSnapshots lists the live snapshots the caller may see, newest
// first.
func (s *Service) SandboxSnapshots(ctx context.Context, f SnapshotFilter, page Page[uuid.UUID]) ([]domain.SandboxSnapshot, PageInfo, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, PageInfo{}, err
	}
	params := sqlc.ListSandboxSnapshotsParams{Tenant: p.TenantFilter(), Sandbox: f.SandboxID, State: f.State}
	rows, info, err := keyset(ctx, page, func(ctx context.Context, asc bool, lo, hi *uuid.UUID, lim int32) (rows []sqlc.SandboxSnapshot, err error) {
		params.Lo, params.Hi, params.Lim = lo, hi, lim
		if asc {
			rows, err = s.q.ListSandboxSnapshotsAsc(ctx, sqlc.ListSandboxSnapshotsAscParams(params))
		} else {
			rows, err = s.q.ListSandboxSnapshots(ctx, params)
		}
		if err != nil {
			return nil, fmt.Errorf("list sandbox snapshots: %w", err)
		}
		return rows, nil
	})
	if err != nil {
		return nil, PageInfo{}, err
	}
	return mapRows(rows, domain.SandboxSnapshotFromRow), info, nil
}

// CountSandboxSnapshots counts what SandboxSnapshots with f pages through.
func (s *Service) CountSandboxSnapshots(ctx context.Context, f SnapshotFilter) (int, error) {
	p, err := caller(ctx)
	if err != nil {
		return 0, err
	}
	n, err := s.q.CountSandboxSnapshots(ctx, sqlc.CountSandboxSnapshotsParams{Tenant: p.TenantFilter(), Sandbox: f.SandboxID, State: f.State})
	if err != nil {
		return 0, fmt.Errorf("count sandbox snapshots: %w", err)
	}
	return int(n), nil
}

// restoreSource reads the snapshot a tenant's sandbox is restored from,
// locked against its deletion when lock is set: a READY, live snapshot of
// the tenant's.
func restoreSource(ctx context.Context, q *sqlc.Queries, tenant, id uuid.UUID, lock bool) (sqlc.SandboxSnapshot, error) {
	read := q.GetSandboxSnapshot
	if lock {
		read = q.LockSandboxSnapshot
	}
	snap, err := read(ctx, id)
	if err != nil {
		return snap, notFound(err, "fromSnapshot", "sandbox snapshot")
	}
	switch {
	case snap.DeletedAt != nil || snap.TenantID != tenant:
		return snap, apierr.NotFoundf("fromSnapshot", "sandbox snapshot not found")
	case snap.State != domain.SnapshotReady:
		msg := fmt.Sprintf("snapshot %s is %s", snap.Name, snap.State)
		if snap.StateReason != "" {
			msg += " (" + snap.StateReason + ")"
		}
		return snap, &apierr.Error{Code: apierr.FailedPrecondition, Field: "fromSnapshot", Message: msg + "; only a READY snapshot can be restored"}
	}
	return snap, nil
}

// restoreFlavor is the size a sandbox restored from snap boots with: that
// of the instance the snapshot was taken of (vCPUs, memory, disk, GPUs),
// whose disk it holds, whatever its template's flavor is now: a smaller
// disk would cut the snapshot's short. A snapshot that does not name its
// instance is refused.
func restoreFlavor(ctx context.Context, q *sqlc.Queries, snap sqlc.SandboxSnapshot) (sqlc.Flavor, error) {
	if snap.PrincipalInstanceID == nil {
		return sqlc.Flavor{}, &apierr.Error{Code: apierr.FailedPrecondition, Field: "fromSnapshot",
			Message: fmt.Sprintf("snapshot %s does not record the instance it was taken of, so the size of its disk is unknown", snap.Name)}
	}
	src, err := q.GetInstance(ctx, *snap.PrincipalInstanceID)
	if err != nil {
		return sqlc.Flavor{}, fmt.Errorf("read the instance snapshot %s was taken of: %w", snap.Name, err)
	}
	return sqlc.Flavor{ID: src.FlavorID, Vcpus: src.Vcpus, MemoryMb: src.MemoryMb, DiskGb: src.DiskGb,
		GpuModel: src.GpuModel, GpuCount: src.GpuCount}, nil
}
