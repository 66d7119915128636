-- What the live allocations of each tenant hold of each host, kept by a
-- trigger on allocations in the statement that allocates or releases, so
-- placement reads a row per host and tenant instead of summing every live
-- allocation of the pool: its cost no longer grows with the fleet.

-- +goose Up
CREATE TABLE host_usage (
    host_id      uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    vcpus        bigint  NOT NULL,
    memory_mb    bigint  NOT NULL,
    disk_gb      bigint  NOT NULL,
    allocations  integer NOT NULL,
    PRIMARY KEY (host_id, tenant_id)
);

INSERT INTO host_usage (host_id, tenant_id, vcpus, memory_mb, disk_gb, allocations)
SELECT host_id, tenant_id, sum(vcpus), sum(memory_mb), sum(disk_gb), count(*)
FROM allocations WHERE released_at IS NULL
GROUP BY host_id, tenant_id;

-- host_usage_track takes a live allocation's old row out of host_usage and
-- puts its new one in: an insert adds, a release subtracts, and any other
-- change stays exact.
-- +goose StatementBegin
CREATE FUNCTION host_usage_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.released_at IS NULL THEN
        UPDATE host_usage SET vcpus = vcpus - OLD.vcpus, memory_mb = memory_mb - OLD.memory_mb,
            disk_gb = disk_gb - OLD.disk_gb, allocations = allocations - 1
        WHERE host_id = OLD.host_id AND tenant_id = OLD.tenant_id;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.released_at IS NULL THEN
        INSERT INTO host_usage AS u (host_id, tenant_id, vcpus, memory_mb, disk_gb, allocations)
        VALUES (NEW.host_id, NEW.tenant_id, NEW.vcpus, NEW.memory_mb, NEW.disk_gb, 1)
        ON CONFLICT (host_id, tenant_id) DO UPDATE SET vcpus = u.vcpus + excluded.vcpus,
            memory_mb = u.memory_mb + excluded.memory_mb, disk_gb = u.disk_gb + excluded.disk_gb,
            allocations = u.allocations + 1;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER allocations_host_usage AFTER INSERT OR UPDATE OR DELETE ON allocations
    FOR EACH ROW EXECUTE FUNCTION host_usage_track();

-- +goose Down
DROP TRIGGER allocations_host_usage ON allocations;
DROP FUNCTION host_usage_track();
DROP TABLE host_usage;
