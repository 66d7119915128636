-- name: CreatePrincipal :one
INSERT INTO principals (id, name, role, tenant_id) VALUES ($1, $2, $3, $4) RETURNING *;

-- name: GetPrincipal :one
SELECT * FROM principals WHERE id = $1;

-- name: GetPrincipalsByIDs :many
SELECT * FROM principals WHERE id = ANY(@ids::uuid[]);

-- name: CreateAPIToken :one
INSERT INTO api_tokens (id, principal_id, name, hash, expires_at)
VALUES ($1, $2, $3, $4, $5) RETURNING *;

-- Authenticate finds the live principal behind a token hash.
-- name: Authenticate :one
SELECT p.id, p.name, p.role, p.tenant_id, t.id AS token_id, t.expires_at
FROM api_tokens t
JOIN principals p ON p.id = t.principal_id
LEFT JOIN tenants tn ON tn.id = p.tenant_id
WHERE t.hash = $1
  AND t.revoked_at IS NULL
  AND (t.expires_at IS NULL OR t.expires_at > now())
  AND tn.deleted_at IS NULL;

-- name: GetAPIToken :one
SELECT t.*, p.tenant_id, p.role
FROM api_tokens t JOIN principals p ON p.id = t.principal_id
WHERE t.id = $1;

-- ListAPITokens lists every API token with its principal's tenant and
-- role, revoked and expired ones too, newest first (at most 10,000).
-- name: ListAPITokens :many
SELECT t.*, p.tenant_id, p.role
FROM api_tokens t JOIN principals p ON p.id = t.principal_id
ORDER BY t.id DESC
LIMIT 10000;

-- name: RevokeAPIToken :one
UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING *;

-- name: RevokeTenantTokens :execrows
UPDATE api_tokens SET revoked_at = now()
WHERE revoked_at IS NULL
  AND principal_id IN (SELECT id FROM principals WHERE tenant_id = $1);

-- name: FindBootstrapToken :one
SELECT id FROM api_tokens WHERE hash = $1;

-- EndedTokens returns which of the given tokens no longer work.
-- name: EndedTokens :many
SELECT id FROM api_tokens
WHERE id = ANY(@ids::uuid[]) AND (revoked_at IS NOT NULL OR (expires_at IS NOT NULL AND expires_at <= now()));
