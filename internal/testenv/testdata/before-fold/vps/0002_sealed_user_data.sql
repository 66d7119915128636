-- User data, sealed with an AEAD key derived from the server secret.

-- +goose Up
ALTER TABLE instances ADD COLUMN user_data_sealed bytea;

-- +goose Down
ALTER TABLE instances DROP COLUMN user_data_sealed;
