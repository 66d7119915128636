-- name: CreateProviderBootstrap :one
INSERT INTO provider_bootstraps (id, provider_account_id, pool_id, name, server_type, image)
VALUES ($1, $2, $3, $4, $5, $6) RETURNING *;

-- HostNameTaken reports whether a host or a provider bootstrap (whose name
-- becomes its host's) has the name.
-- name: HostNameTaken :one
SELECT (EXISTS (SELECT 1 FROM hosts h WHERE h.name = @host_name::text)
    OR EXISTS (SELECT 1 FROM provider_bootstraps b WHERE b.name = @host_name::text))::boolean AS taken;

-- name: GetProviderBootstrap :one
SELECT * FROM provider_bootstraps WHERE id = $1;

-- name: ListProviderBootstraps :many
SELECT * FROM provider_bootstraps ORDER BY created_at DESC, id LIMIT 500;

-- name: LockProviderBootstrap :one
SELECT * FROM provider_bootstraps WHERE id = $1 FOR UPDATE;

-- OpenProviderBootstraps lists the bootstraps still under way, for the
-- rescan.
-- name: OpenProviderBootstraps :many
SELECT id FROM provider_bootstraps WHERE state IN ('PENDING', 'PROVISIONING');

-- ProvisionBootstrap records a bootstrap's machine and the hash of the join
-- token its user data carries.
-- name: ProvisionBootstrap :one
UPDATE provider_bootstraps
SET state = 'PROVISIONING', state_reason = NULL, provider_server_id = @server_id,
    join_token_hash = @token_hash, token_expires_at = @token_expires_at, deadline = @deadline,
    version = version + 1, updated_at = now()
WHERE id = @id AND state = 'PENDING'
RETURNING *;

-- FailBootstrap ends a bootstrap that did not join: its token is dead with
-- it (the join takes only a PROVISIONING bootstrap's).
-- name: FailBootstrap :one
UPDATE provider_bootstraps
SET state = 'FAILED', state_reason = @reason, machine_deleted = true,
    token_expires_at = LEAST(token_expires_at, now()),
    version = version + 1, updated_at = now()
WHERE id = @id AND state IN ('PENDING', 'PROVISIONING')
RETURNING *;

-- BootstrapByToken locks the bootstrap a join token belongs to, while the
-- token can still be used: unused, unexpired, its bootstrap provisioning
-- and not past its deadline.
-- name: BootstrapByToken :one
SELECT * FROM provider_bootstraps
WHERE join_token_hash = @token_hash AND state = 'PROVISIONING' AND token_used_at IS NULL
  AND token_expires_at > now() AND deadline > now()
FOR UPDATE;

-- JoinBootstrap marks a bootstrap JOINED with its host and uses its token
-- up.
-- name: JoinBootstrap :one
UPDATE provider_bootstraps
SET state = 'JOINED', state_reason = NULL, host_id = @host_id, token_used_at = now(),
    version = version + 1, updated_at = now()
WHERE id = @id AND state = 'PROVISIONING'
RETURNING *;


-- ProviderAccountOfBootstrap reads a bootstrap's account, even deleted
-- since.
-- name: ProviderAccountOfBootstrap :one
SELECT * FROM provider_accounts WHERE id = $1;

-- NoteBootstrapRetry keeps why an open bootstrap is being retried,
-- returning it when the reason changed (no row otherwise).
-- name: NoteBootstrapRetry :one
UPDATE provider_bootstraps SET state_reason = @reason, version = version + 1, updated_at = now()
WHERE id = @id AND state IN ('PENDING', 'PROVISIONING') AND state_reason IS DISTINCT FROM @reason
RETURNING *;
