package reconciler

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// restoreHost returns the one host a restored instance may be placed on:
// the one holding its snapshot's files. It is nil for an instance that is
// not a restore, and for one in a pool whose hosts share one snapshot
// store when its snapshot was taken there: any host of the pool has the
// files. why says why it cannot be placed at all: its snapshot's files
// are gone.
func restoreHost(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance, pool sqlc.Pool) (host *uuid.UUID, why string, err error) {
	if inst.RestoreFrom == nil {
		return nil, "", nil
	}
	snap, err := q.GetSandboxSnapshot(ctx, *inst.RestoreFrom)
	if err != nil {
		return nil, "", fmt.Errorf("read the snapshot it restores: %w", err)
	}
	if snap.Purged || snap.HostID == nil {
		return nil, fmt.Sprintf("snapshot %s it restores from was purged", ids.Encode(ids.SandboxSnapshot, snap.ID)), nil
	}
	if !pool.SharedSnapshotStore {
		return snap.HostID, "", nil
	}
	taker, err := q.GetHost(ctx, *snap.HostID)
	if err != nil {
		return nil, "", fmt.Errorf("read the host of the snapshot it restores: %w", err)
	}
	if taker.PoolID != pool.ID {
		return snap.HostID, "", nil // another pool's store
	}
	return nil, "", nil
}

// restoreNoRoom says why a restore waits: the host holding its snapshot,
// among the candidates when it is live and undrained, has no room, has no
// certificate valid for margin more when its pool requires one, or is not
// live.
func restoreNoRoom(ctx context.Context, q *sqlc.Queries, inst sqlc.Instance, pool sqlc.Pool, host uuid.UUID, candidates []sqlc.PlacementCandidatesRow, margin time.Duration) string {
	name := ids.Encode(ids.Host, host)
	if h, err := q.GetHost(ctx, host); err == nil {
		name = h.Name
	}
	snap := ids.Encode(ids.SandboxSnapshot, *inst.RestoreFrom)
	if len(candidates) == 0 {
		return fmt.Sprintf("it restores snapshot %s, whose files are on host %s, which is gone, draining or in another pool", snap, name)
	}
	if spoken, need := domain.SpokenProtocol(candidates[0].Protocol), domain.HostProtocol(inst); spoken < need {
		return fmt.Sprintf("it restores snapshot %s, whose files are on host %s, which speaks host protocol %d; a restore needs %d or later",
			snap, name, spoken, need)
	}
	if pool.RequireCertifiedHosts && !candidates[0].OutlivesMargin {
		return fmt.Sprintf("it restores snapshot %s, whose files are on host %s, which has no certificate valid for %v more; its pool requires certified hosts",
			snap, name, margin)
	}
	return fmt.Sprintf("it restores snapshot %s, whose files are on host %s, which has no room for %d vCPUs, %d MiB, %d GiB",
		snap, name, inst.Vcpus, inst.MemoryMb, inst.DiskGb)
}
