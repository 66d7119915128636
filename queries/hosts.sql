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

-- LockHost locks a host's row before it is deleted.
-- name: LockHost :one
SELECT * FROM hosts WHERE id = $1 FOR UPDATE;

-- HostHolds counts what keeps a host from being deleted: instances on it
-- not DELETED, snapshots whose files it keeps (not purged), and commands
-- it has not ended.
-- name: HostHolds :one
SELECT (SELECT count(*) FROM instances i WHERE i.host_id = @host_id::uuid AND i.state <> 'DELETED')::bigint AS instances,
       (SELECT count(*) FROM sandbox_snapshots s WHERE s.host_id = @host_id::uuid AND NOT s.purged)::bigint AS snapshots,
       (SELECT count(*) FROM host_commands c WHERE c.host_id = @host_id::uuid AND c.state IN ('QUEUED', 'RUNNING'))::bigint AS commands;

-- ForgetHost deletes a host that holds nothing (HostHolds) and what only
-- recorded it: the deleted instances and purged snapshots it once held
-- forget it, its released allocations and device claims, ended commands
-- and stats go; its capacity, GPUs, certificates and join tokens cascade.
-- name: ForgetHost :execrows
WITH forget_instances AS (
    UPDATE instances i SET host_id = NULL, reboot_command_id = NULL WHERE i.host_id = @host_id::uuid AND i.state = 'DELETED'
), forget_snapshots AS (
    UPDATE sandbox_snapshots s SET host_id = NULL, command_id = NULL, purge_command_id = NULL WHERE s.host_id = @host_id::uuid
), drop_claims AS (
    DELETE FROM device_claims d WHERE d.host_id = @host_id::uuid
), drop_allocations AS (
    DELETE FROM allocations a WHERE a.host_id = @host_id::uuid
), drop_commands AS (
    DELETE FROM host_commands c WHERE c.host_id = @host_id::uuid
), drop_stats AS (
    DELETE FROM host_stats st WHERE st.host_id = @host_id::uuid
)
DELETE FROM hosts h WHERE h.id = @host_id::uuid;
