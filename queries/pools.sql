-- name: CreatePool :one
INSERT INTO pools (id, name, class, tenant_id, placement, single_tenant, require_verified_image, provider_account_id, shared_snapshot_store, runtime, require_certified_hosts)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *;

-- name: GetPool :one
SELECT * FROM pools WHERE id = $1;

-- ListPools lists the pools a tenant may use, or every pool when tenant is NULL.
-- name: ListPools :many
SELECT * FROM pools
WHERE sqlc.narg(tenant)::uuid IS NULL OR tenant_id IS NULL OR tenant_id = sqlc.narg(tenant)
ORDER BY name;

-- name: GetPoolsByIDs :many
SELECT * FROM pools WHERE id = ANY(@ids::uuid[]);

-- SetPoolSharedSnapshotStore says whether a pool's hosts share one snapshot
-- store.
-- name: SetPoolSharedSnapshotStore :one
UPDATE pools SET shared_snapshot_store = @shared WHERE id = @id RETURNING *;

-- SetPoolRequireCertifiedHosts says whether a pool places only on hosts
-- whose certificate outlives the placement margin.
-- name: SetPoolRequireCertifiedHosts :one
UPDATE pools SET require_certified_hosts = @required WHERE id = @id RETURNING *;
