-- Until when that host's certificate was valid (NULL: not certified).

-- +goose Up
ALTER TABLE instances ADD COLUMN host_cert_valid_before timestamptz;
ALTER TABLE sandbox_snapshots ADD COLUMN host_cert_valid_before timestamptz;

-- +goose Down
ALTER TABLE sandbox_snapshots DROP COLUMN host_cert_valid_before;
ALTER TABLE instances DROP COLUMN host_cert_valid_before;
