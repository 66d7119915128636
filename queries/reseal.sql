-- The sealed values another key than the current one sealed, by ID from
-- a cursor, for reseal. A sealed value's bytes 2 to 5 name its key.

-- name: StaleUserData :many
SELECT id, user_data_sealed FROM instances
WHERE user_data_sealed IS NOT NULL AND substring(user_data_sealed from 2 for 4) <> @key_id::bytea AND id > @after
ORDER BY id LIMIT 500;

-- name: ResealUserData :execrows
UPDATE instances SET user_data_sealed = @sealed WHERE id = @id AND user_data_sealed = @was;

-- name: StaleProviderCredentials :many
SELECT id, credentials_sealed FROM provider_accounts
WHERE substring(credentials_sealed from 2 for 4) <> @key_id::bytea AND id > @after
ORDER BY id LIMIT 500;

-- name: ResealProviderCredentials :execrows
UPDATE provider_accounts SET credentials_sealed = @sealed WHERE id = @id AND credentials_sealed = @was;

-- name: StaleTemplateEnv :many
SELECT id, env FROM sandbox_templates
WHERE env IS NOT NULL AND substring(env from 2 for 4) <> @key_id::bytea AND id > @after
ORDER BY id LIMIT 500;

-- name: ResealTemplateEnv :execrows
UPDATE sandbox_templates SET env = @sealed WHERE id = @id AND env = @was;

-- name: StaleInstanceEnv :many
SELECT id, env_sealed FROM instances
WHERE env_sealed IS NOT NULL AND substring(env_sealed from 2 for 4) <> @key_id::bytea AND id > @after
ORDER BY id LIMIT 500;

-- name: ResealInstanceEnv :execrows
UPDATE instances SET env_sealed = @sealed WHERE id = @id AND env_sealed = @was;

-- name: StaleHostCAKeys :many
SELECT id, key_sealed FROM host_cas
WHERE substring(key_sealed from 2 for 4) <> @key_id::bytea AND id > @after
ORDER BY id LIMIT 500;

-- name: ResealHostCAKey :execrows
UPDATE host_cas SET key_sealed = @sealed WHERE id = @id AND key_sealed = @was;
