-- What deleting a tenant ends beyond its instances.

-- LiveTenantSandboxes locks a tenant's sandboxes that have not ended.
-- name: LiveTenantSandboxes :many
SELECT id FROM sandboxes WHERE tenant_id = $1 AND ended_as IS NULL ORDER BY id FOR UPDATE;

-- SoftDeleteTenantTemplates deletes a tenant's live templates, their warm
-- counts to 0, so no pool of theirs is filled again.
-- name: SoftDeleteTenantTemplates :many
UPDATE sandbox_templates SET deleted_at = now(), warm_count = 0, version = version + 1, updated_at = now()
WHERE tenant_id = $1 AND deleted_at IS NULL
RETURNING id;
