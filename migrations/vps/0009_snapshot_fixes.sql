-- A snapshot keeps the instance it was taken from (principal_instance_id),
-- which outlives its sandbox's end, and says when its files are gone from
-- its host (purged): a deleted snapshot is purged once the host confirms.

-- +goose Up
ALTER TABLE sandbox_snapshots
    ADD COLUMN principal_instance_id uuid REFERENCES instances (id),
    ADD COLUMN purged boolean NOT NULL DEFAULT false;
CREATE INDEX sandbox_snapshots_unpurged ON sandbox_snapshots (deleted_at) WHERE deleted_at IS NOT NULL AND NOT purged;

-- +goose Down
ALTER TABLE sandbox_snapshots DROP COLUMN purged, DROP COLUMN principal_instance_id;
