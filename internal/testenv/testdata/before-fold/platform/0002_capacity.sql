-- The capacity module: what each instance holds on its host, which devices
-- it claims, and each host's NodeSpec generation, reports and liveness.

-- +goose Up
ALTER TABLE hosts
    ADD COLUMN spec_generation bigint NOT NULL DEFAULT 1,
    ADD COLUMN reported_generation bigint NOT NULL DEFAULT 0,
    ADD COLUMN inventory jsonb NOT NULL DEFAULT '{}';

-- A live allocation has released_at NULL; it is released exactly once.
CREATE TABLE allocations (
    id           uuid PRIMARY KEY,
    host_id      uuid NOT NULL REFERENCES hosts (id),
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    instance_id  uuid NOT NULL,
    vcpus        integer NOT NULL,
    memory_mb    bigint  NOT NULL,
    disk_gb      bigint  NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    released_at  timestamptz
);
CREATE UNIQUE INDEX allocations_instance_live ON allocations (instance_id) WHERE released_at IS NULL;
CREATE INDEX allocations_host_live ON allocations (host_id) WHERE released_at IS NULL;

-- A device of a host claimed by an instance; one live claim per device.
CREATE TABLE device_claims (
    id           uuid PRIMARY KEY,
    host_id      uuid NOT NULL,
    address      text NOT NULL,
    instance_id  uuid NOT NULL,
    claimed_at   timestamptz NOT NULL DEFAULT now(),
    released_at  timestamptz,
    FOREIGN KEY (host_id, address) REFERENCES host_gpus (host_id, address)
);
CREATE UNIQUE INDEX device_claims_device_live ON device_claims (host_id, address) WHERE released_at IS NULL;
CREATE INDEX device_claims_instance_live ON device_claims (instance_id) WHERE released_at IS NULL;

-- Outbox rows may carry an event to publish once the change commits.
ALTER TABLE outbox ADD COLUMN channel text, ADD COLUMN payload jsonb;

-- Wake the relay as soon as work is written.
-- +goose StatementBegin
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outbox', '');
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

-- +goose Down
DROP TRIGGER outbox_notify ON outbox;
DROP FUNCTION outbox_notify();
ALTER TABLE outbox DROP COLUMN channel, DROP COLUMN payload;
DROP TABLE device_claims, allocations;
ALTER TABLE hosts DROP COLUMN spec_generation, DROP COLUMN reported_generation, DROP COLUMN inventory;
