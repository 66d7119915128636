-- Image names are unique per owner: a tenant's own images, and the public
-- images the operators publish. A tenant may name an image as a public one
-- is named. A database that already has duplicates keeps the newest of
-- each name as it is and renames the others, appending the end of their
-- id, so the index can be built.

-- +goose Up
UPDATE images i SET name = i.name || '-' || right(i.id::text, 12)
 WHERE i.deleted_at IS NULL
   AND EXISTS (SELECT 1 FROM images o
                WHERE o.deleted_at IS NULL AND o.name = i.name
                  AND o.tenant_id IS NOT DISTINCT FROM i.tenant_id
                  AND (o.created_at, o.id) > (i.created_at, i.id));
CREATE UNIQUE INDEX images_name_live ON images (coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'), name)
 WHERE deleted_at IS NULL;

-- +goose Down
DROP INDEX images_name_live;
