-- name: InsertSandboxSnapshot :one
INSERT INTO sandbox_snapshots (id, tenant_id, sandbox_id, template_id, name, host_id, principal_instance_id)
VALUES (@id, @tenant_id, @sandbox_id, @template_id, @name, @host_id, @principal_instance_id)
RETURNING *;

-- GetSandboxSnapshot reads a snapshot, deleted or not.
-- name: GetSandboxSnapshot :one
SELECT * FROM sandbox_snapshots WHERE id = $1;

-- name: LockSandboxSnapshot :one
SELECT * FROM sandbox_snapshots WHERE id = $1 FOR UPDATE;

-- ListSandboxSnapshots pages live snapshots newest first. A NULL argument
-- does not filter.
-- It reads a page between the IDs lo and hi; ListSandboxSnapshotsAsc reads the same
-- page oldest first (control.keyset).
-- name: ListSandboxSnapshots :many
SELECT * FROM sandbox_snapshots
WHERE deleted_at IS NULL
  AND (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant))
  AND (sqlc.narg(sandbox)::uuid IS NULL OR sandbox_id = sqlc.narg(sandbox))
  AND (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state))
  AND (sqlc.narg(lo)::uuid IS NULL OR id > sqlc.narg(lo))
  AND (sqlc.narg(hi)::uuid IS NULL OR id < sqlc.narg(hi))
ORDER BY id DESC
LIMIT @lim;

-- name: ListSandboxSnapshotsAsc :many
SELECT * FROM sandbox_snapshots
WHERE deleted_at IS NULL
  AND (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant))
  AND (sqlc.narg(sandbox)::uuid IS NULL OR sandbox_id = sqlc.narg(sandbox))
  AND (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state))
  AND (sqlc.narg(lo)::uuid IS NULL OR id > sqlc.narg(lo))
  AND (sqlc.narg(hi)::uuid IS NULL OR id < sqlc.narg(hi))
ORDER BY id
LIMIT @lim;

-- name: CountSandboxSnapshots :one
SELECT count(*) FROM sandbox_snapshots
WHERE deleted_at IS NULL
  AND (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant))
  AND (sqlc.narg(sandbox)::uuid IS NULL OR sandbox_id = sqlc.narg(sandbox))
  AND (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state));

-- SnapshotUsage counts what a tenant's snapshots hold against its quota:
-- its live snapshots, and the bytes of its live READY ones.
-- name: SnapshotUsage :one
SELECT count(*)::int AS snapshots,
       coalesce(sum(size_bytes) FILTER (WHERE state = 'READY'), 0)::bigint AS bytes
FROM sandbox_snapshots WHERE tenant_id = $1 AND deleted_at IS NULL;

-- LockTenantRow locks a tenant's row, deleted or not: settling a snapshot
-- serializes on it with the API's snapshot quota checks.
-- name: LockTenantRow :exec
SELECT id FROM tenants WHERE id = $1 FOR NO KEY UPDATE;

-- name: DeleteSandboxSnapshot :one
UPDATE sandbox_snapshots SET deleted_at = now(), version = version + 1, updated_at = now()
WHERE id = $1 AND deleted_at IS NULL
RETURNING *;

-- DeleteTenantSnapshots deletes a tenant's live snapshots; the reconciler
-- purges their files.
-- name: DeleteTenantSnapshots :many
UPDATE sandbox_snapshots SET deleted_at = now(), version = version + 1, updated_at = now()
WHERE tenant_id = $1 AND deleted_at IS NULL
RETURNING id;

-- name: SetSnapshotCommand :exec
UPDATE sandbox_snapshots SET command_id = @command_id, version = version + 1, updated_at = now()
WHERE id = @id;

-- name: SetSnapshotPurgeCommand :exec
UPDATE sandbox_snapshots SET purge_command_id = sqlc.narg(purge_command_id), version = version + 1, updated_at = now()
WHERE id = @id;

-- SettleSnapshot ends a PENDING snapshot READY (with its size and sha256,
-- and whether the host that took it was certified, until when) or FAILED
-- (with the reason); a settled one is left as it is.
-- name: SettleSnapshot :one
UPDATE sandbox_snapshots SET state = @state::text, state_reason = @state_reason, size_bytes = sqlc.narg(size_bytes),
    sha256 = sqlc.narg(sha256), host_certified = @host_certified, host_cert_valid_before = sqlc.narg(host_cert_valid_before),
    settled_at = now(), version = version + 1, updated_at = now()
WHERE id = @id AND state = 'PENDING'
RETURNING *;

-- name: MarkSnapshotPurged :exec
UPDATE sandbox_snapshots SET purged = true, version = version + 1, updated_at = now()
WHERE id = $1 AND NOT purged;

-- name: SnapshotByCommand :one
SELECT * FROM sandbox_snapshots WHERE command_id = $1;

-- name: SnapshotByPurgeCommand :one
SELECT * FROM sandbox_snapshots WHERE purge_command_id = $1 FOR UPDATE;

-- UnsettledCommands lists the final commands of snapshots not settled by
-- them: a PENDING snapshot's take, an unpurged one's purge (whose wake was
-- lost).
-- name: UnsettledCommands :many
SELECT c.id FROM sandbox_snapshots s JOIN host_commands c ON c.id = s.command_id
WHERE s.state = 'PENDING' AND c.state IN ('SUCCEEDED', 'FAILED')
UNION
SELECT c.id FROM sandbox_snapshots s JOIN host_commands c ON c.id = s.purge_command_id
WHERE NOT s.purged AND c.state IN ('SUCCEEDED', 'FAILED')
LIMIT @lim;

-- SnapshotsWanted lists the snapshots wanting a command queued: a PENDING
-- one not taken yet, and a deleted or FAILED one whose files are not
-- purged, with no purge queued and its take ended (or never queued).
-- name: SnapshotsWanted :many
SELECT s.id FROM sandbox_snapshots s LEFT JOIN host_commands c ON c.id = s.command_id
WHERE (s.state = 'PENDING' AND s.command_id IS NULL)
   OR ((s.deleted_at IS NOT NULL OR s.state = 'FAILED') AND NOT s.purged AND s.purge_command_id IS NULL
       AND (c.id IS NULL OR c.state IN ('SUCCEEDED', 'FAILED')))
ORDER BY s.id
LIMIT @lim;

-- name: SnapshotNameTaken :one
SELECT EXISTS (SELECT 1 FROM sandbox_snapshots WHERE tenant_id = @tenant AND name = @name AND deleted_at IS NULL);

-- SharedStoreHost picks a live host of a pool whose hosts share one
-- snapshot store, other than other_than, that speaks at least protocol
-- @protocol: one that can purge a snapshot whose own host is gone. None
-- when the pool's store is not shared.
-- name: SharedStoreHost :one
SELECT h.id FROM hosts h JOIN pools p ON p.id = h.pool_id
WHERE h.pool_id = @pool AND p.shared_snapshot_store AND h.id <> @other_than
  AND h.protocol >= @protocol::smallint
  AND h.last_seen_at > now() - make_interval(secs => @silent_after::float8)
ORDER BY h.last_seen_at DESC
LIMIT 1;
