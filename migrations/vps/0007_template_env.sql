-- A template's environment variables: a JSON object of names to values,
-- sealed with the template's ID as associated data like user data, and the
-- names alone, which are all the API shows.

-- +goose Up
ALTER TABLE sandbox_templates
    ADD COLUMN env bytea,
    ADD COLUMN env_names text[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE sandbox_templates DROP COLUMN env, DROP COLUMN env_names;
