-- A sandbox's lifecycle, kept after the fact: each step (created, started,
-- paused, resumed, timeout changed, expired, deleted, failed) is a row, numbered
-- in its sandbox from 1 (seq, the event's version), with the sandbox as the
-- step left it. Every event of a sandbox is written under its instance's row
-- lock, so the numbers follow commit order. No foreign key to sandboxes:
-- its check would lock the sandbox's row (KEY SHARE) from a transaction
-- that holds the instance's, against a mutation holding the sandbox's and
-- waiting for the instance's; sandboxes are never deleted. 0014 is left to
-- the vps.sandboxes reconciler's branch.

-- +goose Up
CREATE TABLE sandbox_events (
    id          bigserial PRIMARY KEY,
    sandbox_id  uuid NOT NULL,
    tenant_id   uuid NOT NULL,
    seq         bigint NOT NULL CHECK (seq > 0),
    type        text NOT NULL CHECK (type IN
        ('CREATED', 'STARTED', 'PAUSED', 'RESUMED', 'TIMEOUT_CHANGED', 'EXPIRED', 'DELETED', 'FAILED')),
    -- Why, for FAILED (the instance's state reason) and EXPIRED.
    reason      text NOT NULL DEFAULT '',
    -- The sandbox as the event left it (events.SandboxView).
    sandbox     jsonb NOT NULL,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (sandbox_id, seq)
);
-- What a subscription's resync reads: a tenant's events since a time.
CREATE INDEX sandbox_events_tenant_at ON sandbox_events (tenant_id, at);
CREATE INDEX sandbox_events_at ON sandbox_events (at);
-- Create to RUNNING, for the metrics.
CREATE INDEX sandbox_events_started ON sandbox_events (sandbox_id, at) WHERE type = 'STARTED';

-- +goose Down
DROP TABLE sandbox_events;
