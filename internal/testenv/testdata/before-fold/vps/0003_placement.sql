-- What the reconciler keeps on an instance: its place in its host's
-- NodeSpec, what the host last saw, and its retry state.

-- +goose Up
ALTER TABLE instances
    -- The power the host is told to hold: running, stopped or paused; NULL
    -- when the instance is not in its host's NodeSpec.
    ADD COLUMN spec_power text CHECK (spec_power IN ('running', 'stopped', 'paused')),
    -- The host's spec generation when this instance's entry last changed.
    -- A report for an older generation says nothing about this instance.
    ADD COLUMN spec_generation bigint NOT NULL DEFAULT 0,
    ADD COLUMN mac text,
    -- What the host last reported: running, stopped, paused, failed, absent.
    ADD COLUMN observed_state text,
    ADD COLUMN observed_reason text NOT NULL DEFAULT '',
    ADD COLUMN observed_at timestamptz,
    -- A host this instance must not be placed on again (it could not start there).
    ADD COLUMN avoid_host_id uuid;
CREATE INDEX instances_host ON instances (host_id) WHERE spec_power IS NOT NULL;
CREATE INDEX instances_pending ON instances (pool_id, created_at) WHERE state = 'PENDING';

-- +goose Down
DROP INDEX instances_pending;
DROP INDEX instances_host;
ALTER TABLE instances DROP COLUMN spec_power, DROP COLUMN spec_generation, DROP COLUMN mac,
    DROP COLUMN observed_state, DROP COLUMN observed_reason, DROP COLUMN observed_at, DROP COLUMN avoid_host_id;
