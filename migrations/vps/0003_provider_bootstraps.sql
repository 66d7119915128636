-- Provider bootstraps: a machine rented through an operator's provider
-- account that becomes a host of a hosted pool. The reconciler creates the
-- machine with user data that starts the host daemon with a one-time join
-- token (stored here only as its hash); the daemon joins and the bootstrap
-- is JOINED with its host, or FAILED at its deadline with the machine
-- deleted.

-- +goose Up
CREATE TABLE provider_bootstraps (
    id                   uuid PRIMARY KEY,
    provider_account_id  uuid NOT NULL REFERENCES provider_accounts (id),
    pool_id              uuid NOT NULL REFERENCES pools (id),
    -- name becomes the machine's and the host's name.
    name                 text NOT NULL UNIQUE,
    server_type          text NOT NULL,
    image                text NOT NULL,
    state                text NOT NULL DEFAULT 'PENDING'
                         CHECK (state IN ('PENDING', 'PROVISIONING', 'JOINED', 'FAILED')),
    state_reason         text,
    provider_server_id   text,
    host_id              uuid REFERENCES hosts (id) ON DELETE SET NULL,
    join_token_hash      bytea UNIQUE,
    token_expires_at     timestamptz,
    token_used_at        timestamptz,
    -- A machine that has not joined by deadline is deleted.
    deadline             timestamptz,
    -- machine_deleted: the machine of a FAILED bootstrap is gone.
    machine_deleted      boolean NOT NULL DEFAULT false,
    version              bigint NOT NULL DEFAULT 1,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX provider_bootstraps_open ON provider_bootstraps (deadline) WHERE state IN ('PENDING', 'PROVISIONING');

-- +goose Down
DROP TABLE provider_bootstraps;
