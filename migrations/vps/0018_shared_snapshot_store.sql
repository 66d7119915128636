-- A hosted pool may say its hosts share one snapshot store (every host of
-- it mounts the same directory at its --snapshot-dir): a restore in it may
-- then be placed on any live host of the pool, and a snapshot whose host is
-- gone is purged by another. Off by default: a snapshot's files are on the
-- host that took it.

-- +goose Up
ALTER TABLE pools ADD COLUMN shared_snapshot_store boolean NOT NULL DEFAULT false
    CHECK (NOT shared_snapshot_store OR class = 'vps-host');

-- +goose Down
ALTER TABLE pools DROP COLUMN shared_snapshot_store;
