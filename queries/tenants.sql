-- name: CreateTenant :one
INSERT INTO tenants (id, name) VALUES ($1, $2) RETURNING *;

-- name: GetTenant :one
SELECT * FROM tenants WHERE id = $1 AND deleted_at IS NULL;

-- LockTenant serializes admission per tenant. NO KEY UPDATE leaves foreign
-- key checks from other transactions unblocked.
-- name: LockTenant :one
SELECT id FROM tenants WHERE id = $1 AND deleted_at IS NULL FOR NO KEY UPDATE;

-- name: ListTenants :many
SELECT * FROM tenants WHERE deleted_at IS NULL ORDER BY name;

-- name: GetTenantsByIDs :many
SELECT * FROM tenants WHERE id = ANY(@ids::uuid[]);

-- name: SoftDeleteTenant :exec
UPDATE tenants SET deleted_at = now() WHERE id = $1;
