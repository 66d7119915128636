-- The snapshot quota: how many live (not deleted) sandbox snapshots a
-- tenant may keep, and how many bytes its READY ones may hold (a NULL
-- limit is unlimited, as the other limits). And sandbox_views again, so it
-- shows sandboxes.from_snapshot (added by 0005 after the view was made).

-- +goose Up
ALTER TABLE quotas
    ADD COLUMN max_snapshots integer CHECK (max_snapshots >= 0),
    ADD COLUMN max_snapshot_bytes bigint CHECK (max_snapshot_bytes >= 0);

-- What a tenant's snapshot usage counts.
CREATE INDEX sandbox_snapshots_live ON sandbox_snapshots (tenant_id) WHERE deleted_at IS NULL;
-- What settling and purging look up.
CREATE UNIQUE INDEX sandbox_snapshots_command ON sandbox_snapshots (command_id) WHERE command_id IS NOT NULL;
CREATE UNIQUE INDEX sandbox_snapshots_purge_command ON sandbox_snapshots (purge_command_id) WHERE purge_command_id IS NOT NULL;

DROP VIEW sandbox_views;
CREATE VIEW sandbox_views AS
SELECT s.*, i.id AS instance_id, sandbox_state(s.ended_as, i.state, i.desired_state)::text AS state
FROM sandboxes s JOIN instances i ON i.sandbox_id = s.id;

-- +goose Down
DROP VIEW sandbox_views;
CREATE VIEW sandbox_views AS
SELECT s.id, s.tenant_id, s.template_id, s.template_version, s.started_from, s.metadata, s.expires_at,
       s.ended_as, s.ended_at, s.idempotency_key, s.version, s.created_at, s.updated_at,
       i.id AS instance_id, sandbox_state(s.ended_as, i.state, i.desired_state)::text AS state
FROM sandboxes s JOIN instances i ON i.sandbox_id = s.id;
DROP INDEX sandbox_snapshots_purge_command, sandbox_snapshots_command, sandbox_snapshots_live;
ALTER TABLE quotas DROP COLUMN max_snapshot_bytes, DROP COLUMN max_snapshots;
