-- name: CreateIPPool :one
INSERT INTO ip_pools (id, pool_id, cidr, gateway, range_start, range_end, dns)
VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *;

-- name: ListIPPools :many
SELECT * FROM ip_pools WHERE pool_id = ANY(@pool_ids::uuid[]) ORDER BY created_at;

-- name: CountLiveLeases :many
SELECT ip_pool_id, count(*)::int AS leased FROM ip_leases
WHERE released_at IS NULL AND ip_pool_id = ANY(@ip_pool_ids::uuid[])
GROUP BY ip_pool_id;

-- name: ListLiveLeases :many
SELECT * FROM ip_leases WHERE released_at IS NULL AND instance_id = ANY(@instance_ids::uuid[])
ORDER BY leased_at;
