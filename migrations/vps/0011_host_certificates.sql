-- Whether the host an instance runs on (a snapshot was taken on) was
-- certified when placed and when it last reported.

-- +goose Up
ALTER TABLE instances ADD COLUMN host_certified boolean NOT NULL DEFAULT false;
ALTER TABLE sandbox_snapshots ADD COLUMN host_certified boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE sandbox_snapshots DROP COLUMN host_certified;
ALTER TABLE instances DROP COLUMN host_certified;
