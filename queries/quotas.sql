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

-- TenantUsage reads what a tenant's live instances hold against its quota,
-- as committed (tenant_usage; zeros for a tenant that never had one).
-- name: TenantUsage :one
SELECT coalesce(u.instances, 0)::int AS instances,
       coalesce(u.vcpus, 0)::int AS vcpus,
       coalesce(u.memory_mb, 0)::bigint AS memory_mb,
       coalesce(u.gpus, 0)::int AS gpus
FROM (SELECT @tenant_id::uuid AS tenant_id) t LEFT JOIN tenant_usage u USING (tenant_id);

-- QuotaUsage reads a tenant's limits and usage (tenant_quota_usage) in
-- one statement: run after taking the tenant's lock, its snapshot holds
-- every create that held the lock before.
-- name: QuotaUsage :one
SELECT * FROM tenant_quota_usage WHERE tenant_id = @tenant_id;

-- DeleteTenantQuota removes a tenant's limits.
-- name: DeleteTenantQuota :execrows
DELETE FROM quotas WHERE tenant_id = $1;

-- LockTenantQuota locks a live tenant for an admission and reads its quota
-- and usage once the lock is granted (lock_tenant_quota); no row: no live
-- tenant.
-- name: LockTenantQuota :one
SELECT * FROM lock_tenant_quota(@tenant_id::uuid);
