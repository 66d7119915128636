-- Every write of an instance stamps updated_at with clock_timestamp(), the
-- time of the write, not now(), its transaction's start: events carry it,
-- and the live fan-out times commit → subscriber from it, which a
-- transaction that first waited on a lock would otherwise inflate.

-- InsertInstance inserts nothing (no rows) when the tenant has an instance
-- with the idempotency key already; it waits for a create of the same key in
-- progress to end first, so a repeat finds the first instance.
-- name: InsertInstance :one
INSERT INTO instances (
    id, tenant_id, pool_id, flavor_id, image_id, image_url, image_sha256, image_format,
    image_verified, name, ssh_keys, vcpus, memory_mb, disk_gb, gpu_model, gpu_count,
    desired_state, state, idempotency_key, user_data_sealed, updated_at
) VALUES (
    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, 'PENDING', $18, $19, clock_timestamp()
)
ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING *;

-- name: GetInstance :one
SELECT * FROM instances WHERE id = $1;

-- LockInstance takes an instance's row lock for a step or a mutation. It is
-- FOR NO KEY UPDATE, not FOR UPDATE: a warm claim tells a row held for a step
-- (which it waits for) from one held by another claim (FOR UPDATE, which it
-- skips); see ClaimWarmInstanceBehindStep.
-- name: LockInstance :one
SELECT * FROM instances WHERE id = $1 FOR NO KEY UPDATE;

-- name: GetInstanceByIdempotencyKey :one
SELECT * FROM instances WHERE tenant_id = $1 AND idempotency_key = $2;

-- ListInstances reads a page between the IDs lo and hi, newest first;
-- ListInstancesAsc the same page oldest first (control.keyset).
-- name: ListInstances :many
SELECT * FROM instances
WHERE (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant))
  AND (sqlc.narg(pool)::uuid IS NULL OR pool_id = sqlc.narg(pool))
  AND (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state))
  AND (sqlc.narg(desired_state)::text IS NULL OR desired_state = sqlc.narg(desired_state))
  AND (sqlc.narg(name)::text IS NULL OR name = sqlc.narg(name))
  AND (NOT @exclude_deleted::boolean OR state <> 'DELETED')
  AND (sqlc.narg(lo)::uuid IS NULL OR id > sqlc.narg(lo))
  AND (sqlc.narg(hi)::uuid IS NULL OR id < sqlc.narg(hi))
ORDER BY id DESC
LIMIT @lim;

-- name: ListInstancesAsc :many
SELECT * FROM instances
WHERE (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant))
  AND (sqlc.narg(pool)::uuid IS NULL OR pool_id = sqlc.narg(pool))
  AND (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state))
  AND (sqlc.narg(desired_state)::text IS NULL OR desired_state = sqlc.narg(desired_state))
  AND (sqlc.narg(name)::text IS NULL OR name = sqlc.narg(name))
  AND (NOT @exclude_deleted::boolean OR state <> 'DELETED')
  AND (sqlc.narg(lo)::uuid IS NULL OR id > sqlc.narg(lo))
  AND (sqlc.narg(hi)::uuid IS NULL OR id < sqlc.narg(hi))
ORDER BY id
LIMIT @lim;

-- name: CountInstances :one
SELECT count(*) FROM instances
WHERE (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant))
  AND (sqlc.narg(pool)::uuid IS NULL OR pool_id = sqlc.narg(pool))
  AND (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state))
  AND (sqlc.narg(desired_state)::text IS NULL OR desired_state = sqlc.narg(desired_state))
  AND (sqlc.narg(name)::text IS NULL OR name = sqlc.narg(name))
  AND (NOT @exclude_deleted::boolean OR state <> 'DELETED');

-- SetDesiredState is a compare-and-set on version.
-- name: SetDesiredState :one
UPDATE instances
SET desired_state = @desired_state, version = version + 1, updated_at = clock_timestamp()
WHERE id = @id AND version = @version
RETURNING *;

-- Reboot moves a running instance to REBOOTING: the reconciler queues the
-- host command that reboots it.
-- name: Reboot :one
UPDATE instances
SET state = 'REBOOTING', state_reason = '', version = version + 1, updated_at = clock_timestamp()
WHERE id = @id AND version = @version AND state = 'RUNNING'
RETURNING *;

-- name: DeleteTenantInstances :many
UPDATE instances
SET desired_state = 'DELETED', version = version + 1, updated_at = clock_timestamp()
WHERE tenant_id = $1 AND desired_state <> 'DELETED'
RETURNING *;

-- WatchInstances reads what a subscription shows: the instances matching
-- its filter, changed since a time when given, deleted ones only if asked.
-- name: WatchInstances :many
SELECT * FROM instances
WHERE (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant))
  AND (cardinality(@ids::uuid[]) = 0 OR id = ANY(@ids::uuid[]))
  AND (sqlc.narg(pool)::uuid IS NULL OR pool_id = sqlc.narg(pool))
  AND (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state))
  AND (sqlc.narg(since)::timestamptz IS NULL OR updated_at >= sqlc.narg(since))
  AND (@include_deleted::boolean OR state <> 'DELETED')
ORDER BY id
LIMIT 10000;

-- name: GetInstancesByIDs :many
SELECT * FROM instances WHERE id = ANY(@ids::uuid[]);

-- InstanceHistory reads the last lim changes of an instance's state,
-- newest first.
-- name: InstanceHistory :many
SELECT from_state, to_state, at FROM instance_state_history
WHERE instance_id = @instance_id
ORDER BY at DESC, id DESC
LIMIT @lim;
