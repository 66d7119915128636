-- name: CreateHost :one
INSERT INTO hosts (id, pool_id, name, credential_hash) VALUES ($1, $2, $3, $4) RETURNING *;

-- name: GetHost :one
SELECT * FROM hosts WHERE id = $1;

-- name: ListHosts :many
SELECT * FROM hosts ORDER BY name;

-- name: GetHostsByIDs :many
SELECT * FROM hosts WHERE id = ANY(@ids::uuid[]);

-- name: SetHostCapacity :one
INSERT INTO host_capacity (host_id, vcpus, memory_mb, disk_gb) VALUES ($1, $2, $3, $4)
ON CONFLICT (host_id) DO UPDATE SET
    vcpus = EXCLUDED.vcpus, memory_mb = EXCLUDED.memory_mb, disk_gb = EXCLUDED.disk_gb, updated_at = now()
RETURNING *;

-- name: GetHostCapacities :many
SELECT * FROM host_capacity WHERE host_id = ANY(@ids::uuid[]);

-- DeleteHostGPUsExcept removes a host's GPUs but those at the kept
-- addresses.
-- name: DeleteHostGPUsExcept :exec
DELETE FROM host_gpus WHERE host_id = @host_id AND NOT (address = ANY(@keep::text[]));

-- PutHostGPU adds a GPU to a host, or sets the vendor and model of one it
-- has, keeping its health: only clearGpuHealth clears an unhealthy mark.
-- name: PutHostGPU :exec
INSERT INTO host_gpus (host_id, address, vendor, model) VALUES ($1, $2, $3, $4)
ON CONFLICT (host_id, address) DO UPDATE SET vendor = EXCLUDED.vendor, model = EXCLUDED.model;

-- name: ListHostGPUs :many
SELECT * FROM host_gpus WHERE host_id = ANY(@ids::uuid[]) ORDER BY host_id, address;

-- HostAllocations sums what live allocations and device claims hold on hosts.
-- name: HostAllocations :many
SELECT h.id AS host_id,
       coalesce(sum(a.vcpus), 0)::bigint AS vcpus,
       coalesce(sum(a.memory_mb), 0)::bigint AS memory_mb,
       coalesce(sum(a.disk_gb), 0)::bigint AS disk_gb,
       count(a.id)::int AS instances,
       (SELECT count(*) FROM device_claims d WHERE d.host_id = h.id AND d.released_at IS NULL)::int AS gpus
FROM hosts h LEFT JOIN allocations a ON a.host_id = h.id AND a.released_at IS NULL
WHERE h.id = ANY(@ids::uuid[])
GROUP BY h.id;

-- name: SetHostDraining :one
UPDATE hosts SET draining = @draining WHERE id = @id RETURNING *;
