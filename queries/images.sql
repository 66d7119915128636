-- name: CreateImage :one
INSERT INTO images (id, name, source, sha256, format, visibility, tenant_id, verified, provider_images)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *;

-- ResolveImage finds an image the tenant owns or that is public.
-- name: ResolveImage :one
SELECT * FROM images
WHERE id = @id AND deleted_at IS NULL AND (tenant_id = @tenant OR visibility = 'public');

-- name: GetImage :one
SELECT * FROM images WHERE id = $1 AND deleted_at IS NULL;

-- ListImages lists the images a tenant can see, or every image when tenant is NULL.
-- name: ListImages :many
SELECT * FROM images
WHERE deleted_at IS NULL
  AND (sqlc.narg(tenant)::uuid IS NULL OR visibility = 'public' OR tenant_id = sqlc.narg(tenant))
ORDER BY name, id;

-- name: GetImagesByIDs :many
SELECT * FROM images WHERE id = ANY(@ids::uuid[]);

-- SoftDeleteTenantImages deletes the images a tenant registered; its
-- instances keep their resolved copy of the image.
-- name: SoftDeleteTenantImages :execrows
UPDATE images SET deleted_at = now() WHERE tenant_id = $1 AND deleted_at IS NULL;
