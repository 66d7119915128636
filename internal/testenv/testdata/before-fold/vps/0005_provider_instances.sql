-- What the reconciler keeps on an instance of a provider pool, and on each
-- provider account: its server there, what the last sweep saw, which sweep
-- is due, and the servers with our label that no live instance owns.

-- +goose Up
ALTER TABLE instances
    -- The provider's ID of the instance's server, once it is made.
    ADD COLUMN provider_server_id text,
    -- When provider_server_id was set: a sweep that listed before then
    -- cannot say the server is gone.
    ADD COLUMN provider_server_at timestamptz,
    -- The server's status as the last call or sweep saw it (a
    -- provider.Status, or 'absent'); observed_at says when.
    ADD COLUMN provider_status text,
    -- The server's public addresses, as the provider reports them.
    ADD COLUMN provider_addresses text[] NOT NULL DEFAULT '{}';

-- One row per account: the last sweep, so that all reconcilers together
-- list each account once an interval.
CREATE TABLE provider_sweeps (
    account_id  uuid PRIMARY KEY REFERENCES provider_accounts (id),
    swept_at    timestamptz NOT NULL
);

-- A server carrying our label that no live instance owns, from the sweep
-- that first saw it; it is deleted once it has been an orphan for the
-- grace period.
CREATE TABLE provider_orphans (
    account_id     uuid NOT NULL REFERENCES provider_accounts (id),
    server_id      text NOT NULL,
    instance_label text NOT NULL,
    first_seen_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, server_id)
);

-- +goose Down
DROP TABLE provider_orphans, provider_sweeps;
ALTER TABLE instances DROP COLUMN provider_server_id, DROP COLUMN provider_server_at,
    DROP COLUMN provider_status, DROP COLUMN provider_addresses;
