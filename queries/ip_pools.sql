-- name: CreateIPPool :one
INSERT INTO ip_pools (id, pool_id, cidr, gateway, range_start, range_end, dns)
VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *;

-- name: ListIPPools :many
SELECT * FROM ip_pools WHERE pool_id = ANY(@pool_ids::uuid[]) ORDER BY created_at;

-- CountLiveLeases counts the live leases of IP pools, only those of one
-- tenant's instances when tenant is set.
-- name: CountLiveLeases :many
SELECT l.ip_pool_id, count(*)::int AS leased FROM ip_leases l
JOIN instances i ON i.id = l.instance_id
WHERE l.released_at IS NULL AND l.ip_pool_id = ANY(@ip_pool_ids::uuid[])
  AND (sqlc.narg(tenant)::uuid IS NULL OR i.tenant_id = sqlc.narg(tenant))
GROUP BY l.ip_pool_id;

-- name: ListLiveLeases :many
SELECT * FROM ip_leases WHERE released_at IS NULL AND instance_id = ANY(@instance_ids::uuid[])
ORDER BY leased_at;
