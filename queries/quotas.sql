-- name: SetQuota :one
INSERT INTO quotas (tenant_id, max_instances, max_vcpus, max_memory_mb, max_gpus, max_snapshots, max_snapshot_bytes)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (tenant_id) DO UPDATE SET
    max_instances = EXCLUDED.max_instances,
    max_vcpus = EXCLUDED.max_vcpus,
    max_memory_mb = EXCLUDED.max_memory_mb,
    max_gpus = EXCLUDED.max_gpus,
    max_snapshots = EXCLUDED.max_snapshots,
    max_snapshot_bytes = EXCLUDED.max_snapshot_bytes,
    updated_at = now()
RETURNING *;

-- name: GetQuota :one
SELECT * FROM quotas WHERE tenant_id = $1;

-- TenantUsage counts what a tenant's live instances hold against its quota.
-- name: TenantUsage :one
SELECT count(*)::int AS instances,
       coalesce(sum(vcpus), 0)::int AS vcpus,
       coalesce(sum(memory_mb), 0)::bigint AS memory_mb,
       coalesce(sum(gpu_count), 0)::int AS gpus
FROM instances WHERE tenant_id = $1 AND state <> 'DELETED';

-- QuotaUsage reads a tenant's quota and what its live instances, besides
-- the one with ID instance_id, hold against it, in one statement: a create
-- that inserted that instance before taking the tenant's lock checks it
-- under the lock in one round trip. No row when the tenant has no quota.
-- name: QuotaUsage :one
SELECT sqlc.embed(quotas), u.instances, u.vcpus, u.memory_mb, u.gpus
FROM quotas, LATERAL (
    SELECT count(*)::int AS instances,
           coalesce(sum(vcpus), 0)::int AS vcpus,
           coalesce(sum(memory_mb), 0)::bigint AS memory_mb,
           coalesce(sum(gpu_count), 0)::int AS gpus
    FROM instances
    WHERE tenant_id = quotas.tenant_id AND state <> 'DELETED' AND id <> @instance_id
) u
WHERE quotas.tenant_id = @tenant_id;

-- DeleteTenantQuota removes a tenant's limits.
-- name: DeleteTenantQuota :execrows
DELETE FROM quotas WHERE tenant_id = $1;
