-- Usage metering (vps.usage). Every change of an instance's state, and of
-- what it holds or whom it is billed to, is recorded in
-- instance_state_history by a trigger, in the transaction that made it: the
-- trigger is the one place every path that writes instances.state passes
-- (the reconciler's Transition, each INSERT of createInstance, sandboxes,
-- warm pools and restores, a warm instance's claim), today's and later
-- ones; a row deleted outright is recorded as DELETED. Each history row holds from `at` until `ended_at` (the next change;
-- NULL while current). The usage job meters closed intervals from this
-- history alone into usage_records, one row per instance per interval.

-- +goose Up
CREATE TABLE instance_state_history (
    id           bigserial PRIMARY KEY,
    instance_id  uuid NOT NULL,
    -- The state before the change; NULL when the instance was created.
    from_state   text,
    to_state     text NOT NULL,
    at           timestamptz NOT NULL,
    -- When the next change of this instance replaced this one.
    ended_at     timestamptz,
    tenant_id    uuid NOT NULL,
    pool_id      uuid NOT NULL,
    flavor_id    uuid NOT NULL,
    sandbox_id   uuid,
    vcpus        integer NOT NULL,
    memory_mb    bigint NOT NULL,
    disk_gb      integer NOT NULL,
    gpu_count    integer NOT NULL
);
CREATE INDEX instance_state_history_instance ON instance_state_history (instance_id, at);
CREATE UNIQUE INDEX instance_state_history_current ON instance_state_history (instance_id) WHERE ended_at IS NULL;
-- What an interval's metering reads: spans still open or ended after the
-- interval began (a bitmap OR of ended_at IS NULL and ended_at > start).
CREATE INDEX instance_state_history_span ON instance_state_history (ended_at) WHERE to_state <> 'DELETED';

-- +goose StatementBegin
CREATE FUNCTION record_instance_state() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    t    timestamptz := clock_timestamp();
    prev timestamptz;
BEGIN
    IF TG_OP = 'DELETE' THEN
        -- An instance row removed outright ends as DELETED, so it is not
        -- metered after.
        NEW := OLD;
        NEW.state := 'DELETED';
    END IF;
    IF TG_OP <> 'INSERT' THEN
        -- The row lock orders two changes of one instance; greatest() keeps
        -- the history monotonic even if clocks disagree.
        SELECT at INTO prev FROM instance_state_history WHERE instance_id = NEW.id AND ended_at IS NULL;
        t := greatest(t, prev);
        UPDATE instance_state_history SET ended_at = t WHERE instance_id = NEW.id AND ended_at IS NULL;
    END IF;
    INSERT INTO instance_state_history (instance_id, from_state, to_state, at, tenant_id, pool_id, flavor_id,
        sandbox_id, vcpus, memory_mb, disk_gb, gpu_count)
    VALUES (NEW.id, CASE WHEN TG_OP <> 'INSERT' THEN OLD.state END, NEW.state, t, NEW.tenant_id, NEW.pool_id,
        NEW.flavor_id, NEW.sandbox_id, NEW.vcpus, NEW.memory_mb, NEW.disk_gb, NEW.gpu_count);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER instances_state_created AFTER INSERT ON instances
    FOR EACH ROW EXECUTE FUNCTION record_instance_state();
CREATE TRIGGER instances_state_changed AFTER UPDATE ON instances
    FOR EACH ROW WHEN ((OLD.state, OLD.tenant_id, OLD.pool_id, OLD.flavor_id, OLD.sandbox_id,
                        OLD.vcpus, OLD.memory_mb, OLD.disk_gb, OLD.gpu_count)
          IS DISTINCT FROM (NEW.state, NEW.tenant_id, NEW.pool_id, NEW.flavor_id, NEW.sandbox_id,
                        NEW.vcpus, NEW.memory_mb, NEW.disk_gb, NEW.gpu_count))
    EXECUTE FUNCTION record_instance_state();
CREATE TRIGGER instances_state_removed AFTER DELETE ON instances
    FOR EACH ROW WHEN (OLD.state <> 'DELETED') EXECUTE FUNCTION record_instance_state();

-- What came before this migration is not known: each live instance's
-- history begins now.
INSERT INTO instance_state_history (instance_id, from_state, to_state, at, tenant_id, pool_id, flavor_id,
    sandbox_id, vcpus, memory_mb, disk_gb, gpu_count)
SELECT id, NULL, state, now(), tenant_id, pool_id, flavor_id, sandbox_id, vcpus, memory_mb, disk_gb, gpu_count
FROM instances WHERE state <> 'DELETED';

-- One row per instance per metered interval [interval_start, interval_end):
-- the seconds it spent in each state class within it, and what it held
-- (its last recorded size and owner within the interval).
CREATE TABLE usage_records (
    instance_id      uuid NOT NULL,
    interval_start   timestamptz NOT NULL,
    interval_end     timestamptz NOT NULL,
    tenant_id        uuid NOT NULL,
    sandbox_id       uuid,
    pool_id          uuid NOT NULL,
    flavor_id        uuid NOT NULL,
    -- RUNNING: bills vCPUs, memory, disk and GPUs.
    running_seconds  double precision NOT NULL,
    -- PAUSED: bills memory, disk and GPUs (its memory is kept).
    paused_seconds   double precision NOT NULL,
    -- STOPPED: bills disk.
    stopped_seconds  double precision NOT NULL,
    -- Every other state (PENDING, PROVISIONING, STARTING, STOPPING,
    -- REBOOTING, DELETING, ERROR, LOST): bills nothing.
    other_seconds    double precision NOT NULL,
    vcpus            integer NOT NULL,
    memory_mb        bigint NOT NULL,
    disk_gb          integer NOT NULL,
    gpu_count        integer NOT NULL,
    metered_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance_id, interval_start)
);
CREATE INDEX usage_records_interval ON usage_records (interval_start);
CREATE INDEX usage_records_tenant ON usage_records (tenant_id, interval_start);

-- How far usage is metered: every interval before metered_until is.
CREATE TABLE usage_meter (
    id             boolean PRIMARY KEY DEFAULT true CHECK (id),
    metered_until  timestamptz NOT NULL
);

-- +goose Down
DROP TABLE usage_meter;
DROP TABLE usage_records;
DROP TRIGGER instances_state_removed ON instances;
DROP TRIGGER instances_state_changed ON instances;
DROP TRIGGER instances_state_created ON instances;
DROP FUNCTION record_instance_state();
DROP TABLE instance_state_history;
