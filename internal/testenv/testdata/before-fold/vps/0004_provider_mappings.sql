-- What flavors and images are at each provider: a flavor's server type and
-- an image's name or template there, by provider kind.

-- +goose Up
ALTER TABLE flavors ADD COLUMN provider_types jsonb NOT NULL DEFAULT '{}';
ALTER TABLE images ADD COLUMN provider_images jsonb NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE images DROP COLUMN provider_images;
ALTER TABLE flavors DROP COLUMN provider_types;
