-- lock_tenant_quota locks a live tenant for an admission (its row, FOR NO
-- KEY UPDATE, as LockTenant) and then reads its quota and usage, in one
-- round trip where the lock and the read were two, so the tenant's lock is
-- held one round trip less per create. Each statement of a volatile
-- function takes a snapshot of its own under READ COMMITTED: the read,
-- made once the lock is granted, sees every admission committed before it
-- (a single locking SELECT joining the usage would read it as of before
-- the wait). No row: no live tenant.

-- +goose Up
-- tenant_quota_usage is a tenant's limits (null: none) beside its usage.
CREATE VIEW tenant_quota_usage AS
SELECT t.id AS tenant_id,
       q.max_instances, q.max_vcpus, q.max_memory_mb, q.max_gpus,
       coalesce(u.instances, 0) AS instances, coalesce(u.vcpus, 0) AS vcpus,
       coalesce(u.memory_mb, 0::bigint) AS memory_mb, coalesce(u.gpus, 0) AS gpus
FROM tenants t
LEFT JOIN quotas q ON q.tenant_id = t.id
LEFT JOIN tenant_usage u ON u.tenant_id = t.id;

-- +goose StatementBegin
CREATE FUNCTION lock_tenant_quota(tenant uuid) RETURNS SETOF tenant_quota_usage
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM 1 FROM tenants WHERE id = tenant AND deleted_at IS NULL FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM tenant_quota_usage WHERE tenant_id = tenant;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION lock_tenant_quota(uuid);
DROP VIEW tenant_quota_usage;
