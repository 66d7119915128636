-- name: InsertSandboxTemplate :one
INSERT INTO sandbox_templates (
    id, tenant_id, public, name, pool_id, flavor_id, image_id, ssh_keys, env, env_names, network,
    default_timeout_s, max_timeout_s, warm_count
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
RETURNING *;

-- name: GetSandboxTemplate :one
SELECT * FROM sandbox_templates WHERE id = $1 AND deleted_at IS NULL;

-- LockSandboxTemplate locks a template against changes, but not against
-- the foreign keys of sandboxes and instances made of it meanwhile (FOR NO
-- KEY UPDATE, not FOR UPDATE): createSandbox inserts its sandbox holding
-- its tenant's lock, which the holder of this lock takes next.
-- name: LockSandboxTemplate :one
SELECT * FROM sandbox_templates WHERE id = $1 AND deleted_at IS NULL FOR NO KEY UPDATE;

-- GetSandboxTemplatesByIDs loads templates, deleted ones included (a
-- sandbox outlives its template in the list).
-- name: GetSandboxTemplatesByIDs :many
SELECT * FROM sandbox_templates WHERE id = ANY(@ids::uuid[]);

-- ListSandboxTemplates pages newest first through the live templates a
-- tenant sees: its own and the public ones; a NULL tenant sees all.
-- It reads a page between the IDs lo and hi; ListSandboxTemplatesAsc reads the same
-- page oldest first (control.keyset).
-- name: ListSandboxTemplates :many
SELECT * FROM sandbox_templates
WHERE deleted_at IS NULL
  AND (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant) OR public)
  AND (sqlc.narg(lo)::uuid IS NULL OR id > sqlc.narg(lo))
  AND (sqlc.narg(hi)::uuid IS NULL OR id < sqlc.narg(hi))
ORDER BY id DESC
LIMIT @lim;

-- name: ListSandboxTemplatesAsc :many
SELECT * FROM sandbox_templates
WHERE deleted_at IS NULL
  AND (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant) OR public)
  AND (sqlc.narg(lo)::uuid IS NULL OR id > sqlc.narg(lo))
  AND (sqlc.narg(hi)::uuid IS NULL OR id < sqlc.narg(hi))
ORDER BY id
LIMIT @lim;

-- name: CountSandboxTemplates :one
SELECT count(*) FROM sandbox_templates
WHERE deleted_at IS NULL
  AND (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant) OR public);

-- UpdateSandboxTemplate writes every field and bumps version; the caller
-- says the instance version.
-- name: UpdateSandboxTemplate :one
UPDATE sandbox_templates SET
    name = @name, flavor_id = @flavor_id, image_id = @image_id, ssh_keys = @ssh_keys,
    env = @env, env_names = @env_names, network = @network,
    default_timeout_s = @default_timeout_s, max_timeout_s = @max_timeout_s, warm_count = @warm_count,
    instance_version = @instance_version, version = version + 1, updated_at = now()
WHERE id = @id AND deleted_at IS NULL
RETURNING *;

-- name: SoftDeleteSandboxTemplate :one
UPDATE sandbox_templates SET deleted_at = now(), warm_count = 0, version = version + 1, updated_at = now()
WHERE id = $1 AND deleted_at IS NULL
RETURNING *;

-- SandboxTemplateNameTaken says whether an owner (NULL: the public
-- templates of no tenant) has a live template named so, besides other_than.
-- name: SandboxTemplateNameTaken :one
SELECT EXISTS (
    SELECT 1 FROM sandbox_templates
    WHERE coalesce(tenant_id, '00000000-0000-0000-0000-000000000000') = coalesce(sqlc.narg(tenant)::uuid, '00000000-0000-0000-0000-000000000000')
      AND name = @name AND deleted_at IS NULL AND id <> @other_than
);

-- LiveSandboxesOfTemplate counts a template's sandboxes that have not
-- ended and whose instance is not deleted.
-- name: LiveSandboxesOfTemplate :one
SELECT count(*) FROM sandbox_views WHERE template_id = $1 AND state NOT IN ('EXPIRED', 'DELETED');

-- TenantUsageBesidesWarm is TenantUsage without the free warm instances of
-- one template: what a warm count of that template adds to.
-- name: TenantUsageBesidesWarm :one
SELECT (coalesce(u.instances, 0) - w.instances)::int AS instances,
       (coalesce(u.vcpus, 0) - w.vcpus)::int AS vcpus,
       (coalesce(u.memory_mb, 0) - w.memory_mb)::bigint AS memory_mb,
       (coalesce(u.gpus, 0) - w.gpus)::int AS gpus
FROM (SELECT count(*) AS instances, coalesce(sum(vcpus), 0) AS vcpus,
             coalesce(sum(memory_mb), 0) AS memory_mb, coalesce(sum(gpu_count), 0) AS gpus
      FROM instances
      WHERE instances.tenant_id = @tenant_id AND warm_template_id = @template_id::uuid
        AND claimed_at IS NULL AND state <> 'DELETED') w
LEFT JOIN tenant_usage u ON u.tenant_id = @tenant_id;
