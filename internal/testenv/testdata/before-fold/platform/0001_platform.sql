-- Platform tables every module builds on: tenants, quotas, IAM, pools, hosts,
-- images, the audit trail and the outbox that feeds the reconciler.

-- +goose Up
CREATE TABLE tenants (
    id          uuid PRIMARY KEY,
    name        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz
);
CREATE UNIQUE INDEX tenants_name_live ON tenants (name) WHERE deleted_at IS NULL;

-- A NULL limit is unlimited. A tenant without a row has no limits.
CREATE TABLE quotas (
    tenant_id      uuid PRIMARY KEY REFERENCES tenants (id),
    max_instances  integer CHECK (max_instances >= 0),
    max_vcpus      integer CHECK (max_vcpus >= 0),
    max_memory_mb  bigint  CHECK (max_memory_mb >= 0),
    max_gpus       integer CHECK (max_gpus >= 0),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE principals (
    id          uuid PRIMARY KEY,
    name        text NOT NULL,
    role        text NOT NULL CHECK (role IN ('operator', 'member')),
    tenant_id   uuid REFERENCES tenants (id),
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((role = 'member') = (tenant_id IS NOT NULL))
);
CREATE INDEX principals_tenant ON principals (tenant_id);

-- Tokens are stored as the SHA-256 of the secret; the secret is shown once.
CREATE TABLE api_tokens (
    id            uuid PRIMARY KEY,
    principal_id  uuid NOT NULL REFERENCES principals (id),
    name          text NOT NULL,
    hash          bytea NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    revoked_at    timestamptz
);
CREATE INDEX api_tokens_principal ON api_tokens (principal_id);

-- A pool is where instances run. tenant_id NULL: shared by every tenant.
CREATE TABLE pools (
    id                      uuid PRIMARY KEY,
    name                    text NOT NULL UNIQUE,
    class                   text NOT NULL,
    tenant_id               uuid REFERENCES tenants (id),
    placement               text NOT NULL DEFAULT 'spread' CHECK (placement IN ('spread', 'pack')),
    single_tenant           boolean NOT NULL DEFAULT false,
    require_verified_image  boolean NOT NULL DEFAULT false,
    created_at              timestamptz NOT NULL DEFAULT now()
);

-- An adopted hypervisor host. The credential is stored as a SHA-256 hash.
CREATE TABLE hosts (
    id               uuid PRIMARY KEY,
    pool_id          uuid NOT NULL REFERENCES pools (id),
    name             text NOT NULL UNIQUE,
    credential_hash  bytea NOT NULL UNIQUE,
    draining         boolean NOT NULL DEFAULT false,
    last_seen_at     timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX hosts_pool ON hosts (pool_id);

-- What a host can give to instances. A host without a row gets nothing placed.
CREATE TABLE host_capacity (
    host_id     uuid PRIMARY KEY REFERENCES hosts (id) ON DELETE CASCADE,
    vcpus       integer NOT NULL CHECK (vcpus >= 0),
    memory_mb   bigint  NOT NULL CHECK (memory_mb >= 0),
    disk_gb     bigint  NOT NULL CHECK (disk_gb >= 0),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The GPU devices of a host, by PCI address.
CREATE TABLE host_gpus (
    host_id  uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    address  text NOT NULL,
    vendor   text NOT NULL,
    model    text NOT NULL,
    PRIMARY KEY (host_id, address)
);

CREATE TABLE images (
    id          uuid PRIMARY KEY,
    name        text NOT NULL,
    source      text NOT NULL,
    sha256      text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    format      text NOT NULL CHECK (format IN ('raw', 'qcow2', 'iso')),
    visibility  text NOT NULL CHECK (visibility IN ('public', 'tenant')),
    tenant_id   uuid REFERENCES tenants (id),
    verified    boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz,
    CHECK ((visibility = 'tenant') = (tenant_id IS NOT NULL))
);

-- Every mutation, successful or not. No foreign keys: the trail outlives
-- what it names.
CREATE TABLE audit_events (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at            timestamptz NOT NULL DEFAULT now(),
    principal_id  uuid,
    tenant_id     uuid,
    action        text NOT NULL,
    target_type   text NOT NULL DEFAULT '',
    target_id     uuid,
    request_id    text NOT NULL,
    outcome       text NOT NULL CHECK (outcome IN ('success', 'failure')),
    error_code    text NOT NULL DEFAULT '',
    details       jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_events_tenant ON audit_events (tenant_id, id DESC);

-- Work written in the same transaction as the change it is about; the relay
-- moves rows to the work stream and deletes them.
CREATE TABLE outbox (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic       text NOT NULL,
    key         uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE outbox, audit_events, images, host_gpus, host_capacity, hosts, pools,
    api_tokens, principals, quotas, tenants;
