-- A template's network policy (allowInternetAccess, allowOut, denyOut) and
-- its instance version, which every change to what a booted instance holds
-- (flavor, image, keys, env, network) increases. Each instance made from a
-- template keeps the policy it was made with, for its host, and a warm one
-- the version it was made of, so a pool rolls over to a new version.

-- +goose Up
ALTER TABLE sandbox_templates
    ADD COLUMN network jsonb NOT NULL DEFAULT '{"allowInternetAccess": true, "allowOut": [], "denyOut": []}',
    ADD COLUMN instance_version bigint NOT NULL DEFAULT 1;
ALTER TABLE instances
    ADD COLUMN network_policy jsonb,
    ADD COLUMN warm_template_version bigint;

-- +goose Down
ALTER TABLE instances DROP COLUMN warm_template_version, DROP COLUMN network_policy;
ALTER TABLE sandbox_templates DROP COLUMN instance_version, DROP COLUMN network;
