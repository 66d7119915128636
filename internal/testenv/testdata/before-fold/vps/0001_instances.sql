-- The vps module's tables: flavors, provider accounts, instances and IPAM.

-- +goose Up
CREATE TABLE flavors (
    id          uuid PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    vcpus       integer NOT NULL CHECK (vcpus > 0),
    memory_mb   bigint  NOT NULL CHECK (memory_mb > 0),
    disk_gb     integer NOT NULL CHECK (disk_gb > 0),
    gpu_model   text,
    gpu_count   integer NOT NULL DEFAULT 0 CHECK (gpu_count >= 0),
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((gpu_count > 0) = (gpu_model IS NOT NULL))
);

CREATE TABLE provider_accounts (
    id                  uuid PRIMARY KEY,
    tenant_id           uuid REFERENCES tenants (id),
    provider            text NOT NULL,
    name                text NOT NULL,
    credentials_sealed  bytea NOT NULL,
    settings            jsonb NOT NULL DEFAULT '{}',
    created_at          timestamptz NOT NULL DEFAULT now(),
    deleted_at          timestamptz
);

ALTER TABLE pools ADD COLUMN provider_account_id uuid REFERENCES provider_accounts (id);

-- The flavor's size is copied onto the instance so quota and placement never
-- depend on a flavor changing later; so is the resolved image.
CREATE TABLE instances (
    id               uuid PRIMARY KEY,
    tenant_id        uuid NOT NULL REFERENCES tenants (id),
    pool_id          uuid NOT NULL REFERENCES pools (id),
    flavor_id        uuid NOT NULL REFERENCES flavors (id),
    image_id         uuid NOT NULL,
    image_url        text NOT NULL,
    image_sha256     text NOT NULL,
    image_format     text NOT NULL,
    image_verified   boolean NOT NULL,
    name             text NOT NULL,
    ssh_keys         text[] NOT NULL,
    vcpus            integer NOT NULL,
    memory_mb        bigint  NOT NULL,
    disk_gb          integer NOT NULL,
    gpu_model        text,
    gpu_count        integer NOT NULL DEFAULT 0,
    desired_state    text NOT NULL CHECK (desired_state IN ('RUNNING', 'STOPPED', 'DELETED')),
    state            text NOT NULL CHECK (state IN ('PENDING', 'PROVISIONING', 'STARTING', 'RUNNING',
                         'STOPPING', 'STOPPED', 'PAUSED', 'REBOOTING', 'DELETING', 'DELETED', 'ERROR', 'LOST')),
    state_reason     text NOT NULL DEFAULT '',
    host_id          uuid REFERENCES hosts (id),
    idempotency_key  text,
    version          bigint NOT NULL DEFAULT 1,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX instances_idempotency ON instances (tenant_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE UNIQUE INDEX instances_name_live ON instances (tenant_id, name) WHERE state <> 'DELETED';
CREATE INDEX instances_tenant ON instances (tenant_id, id DESC);
CREATE INDEX instances_pool ON instances (pool_id);
CREATE INDEX instances_unsettled ON instances (id) WHERE state <> desired_state;

CREATE TABLE ip_pools (
    id           uuid PRIMARY KEY,
    pool_id      uuid NOT NULL REFERENCES pools (id),
    cidr         cidr NOT NULL,
    gateway      inet NOT NULL,
    range_start  inet NOT NULL,
    range_end    inet NOT NULL,
    dns          inet[] NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    CHECK (range_start <= range_end),
    CHECK (cidr >>= range_start AND cidr >>= range_end AND cidr >>= gateway)
);
CREATE INDEX ip_pools_pool ON ip_pools (pool_id);

-- An address leased to an instance; released_at is set exactly once.
CREATE TABLE ip_leases (
    id           uuid PRIMARY KEY,
    ip_pool_id   uuid NOT NULL REFERENCES ip_pools (id),
    address      inet NOT NULL,
    mac          text NOT NULL,
    instance_id  uuid NOT NULL REFERENCES instances (id),
    leased_at    timestamptz NOT NULL DEFAULT now(),
    released_at  timestamptz
);
CREATE UNIQUE INDEX ip_leases_address_live ON ip_leases (ip_pool_id, address) WHERE released_at IS NULL;
CREATE INDEX ip_leases_instance ON ip_leases (instance_id);

-- +goose Down
DROP TABLE ip_leases, ip_pools, instances;
ALTER TABLE pools DROP COLUMN provider_account_id;
DROP TABLE provider_accounts, flavors;
