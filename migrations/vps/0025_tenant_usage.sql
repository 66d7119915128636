-- What each tenant's live instances (state not DELETED) hold against its
-- quota, kept by a trigger on instances, so admission reads a row per
-- tenant under the tenant's lock instead of counting the tenant's
-- instances: its cost no longer grows with the tenant.
--
-- The trigger is deferred to commit: a create takes no lock on the row when
-- it inserts, only at its commit, which it reaches holding the tenant's lock
-- (taken last, for the quota check). So the row holds what committed
-- transactions hold; a check under the tenant's lock adds what it admits.

-- +goose Up
CREATE TABLE tenant_usage (
    tenant_id  uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    instances  integer NOT NULL,
    vcpus      integer NOT NULL,
    memory_mb  bigint  NOT NULL,
    gpus       integer NOT NULL
);

LOCK TABLE instances IN SHARE MODE;

INSERT INTO tenant_usage (tenant_id, instances, vcpus, memory_mb, gpus)
SELECT tenant_id, count(*), sum(vcpus), sum(memory_mb), sum(gpu_count)
FROM instances WHERE state <> 'DELETED'
GROUP BY tenant_id;

-- tenant_usage_track takes a live instance's old row out of tenant_usage and
-- puts its new one in: a create adds, the change to DELETED subtracts, and
-- any other change (a resize, a row deleted) stays exact.
-- +goose StatementBegin
CREATE FUNCTION tenant_usage_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.state <> 'DELETED' THEN
        UPDATE tenant_usage SET instances = instances - 1, vcpus = vcpus - OLD.vcpus,
            memory_mb = memory_mb - OLD.memory_mb, gpus = gpus - OLD.gpu_count
        WHERE tenant_id = OLD.tenant_id;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.state <> 'DELETED' THEN
        INSERT INTO tenant_usage AS u (tenant_id, instances, vcpus, memory_mb, gpus)
        VALUES (NEW.tenant_id, 1, NEW.vcpus, NEW.memory_mb, NEW.gpu_count)
        ON CONFLICT (tenant_id) DO UPDATE SET instances = u.instances + 1,
            vcpus = u.vcpus + excluded.vcpus, memory_mb = u.memory_mb + excluded.memory_mb,
            gpus = u.gpus + excluded.gpus;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- One trigger per event, each calling the function only for a change that
-- moves usage: the reconciler's state changes between live states do not.
CREATE CONSTRAINT TRIGGER instances_tenant_usage_insert AFTER INSERT ON instances
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (NEW.state <> 'DELETED') EXECUTE FUNCTION tenant_usage_track();
CREATE CONSTRAINT TRIGGER instances_tenant_usage_update AFTER UPDATE ON instances
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN ((OLD.state = 'DELETED') IS DISTINCT FROM (NEW.state = 'DELETED')
       OR (NEW.state <> 'DELETED' AND (OLD.tenant_id, OLD.vcpus, OLD.memory_mb, OLD.gpu_count)
           IS DISTINCT FROM (NEW.tenant_id, NEW.vcpus, NEW.memory_mb, NEW.gpu_count)))
    EXECUTE FUNCTION tenant_usage_track();
CREATE CONSTRAINT TRIGGER instances_tenant_usage_delete AFTER DELETE ON instances
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.state <> 'DELETED') EXECUTE FUNCTION tenant_usage_track();

-- +goose Down
DROP TRIGGER instances_tenant_usage_delete ON instances;
DROP TRIGGER instances_tenant_usage_update ON instances;
DROP TRIGGER instances_tenant_usage_insert ON instances;
DROP FUNCTION tenant_usage_track();
DROP TABLE tenant_usage;
