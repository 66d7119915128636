-- When a sandbox claimed a warm instance; NULL while it waits in its pool.
-- createSandbox claims one with a conditional update on claimed_at IS NULL,
-- so no warm instance is claimed twice.

-- +goose Up
ALTER TABLE instances ADD COLUMN claimed_at timestamptz;

-- +goose Down
ALTER TABLE instances DROP COLUMN claimed_at;
