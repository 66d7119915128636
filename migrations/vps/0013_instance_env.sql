-- The environment of an instance made from a template: its own copy of
-- its template version's env, sealed with the instance's ID as associated
-- data, which the gateway opens into the host's NodeSpec.

-- +goose Up
ALTER TABLE instances ADD COLUMN env_sealed bytea;

-- +goose Down
ALTER TABLE instances DROP COLUMN env_sealed;
