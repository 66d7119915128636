-- LockPool serializes placement in a pool, so two reconcilers never give
-- the same room or address twice.
-- name: LockPool :one
SELECT * FROM pools WHERE id = $1 FOR NO KEY UPDATE;

-- PlacementCandidates lists the live, undrained hosts of a pool with their
-- capacity, what live allocations use of it (host_usage, a row per
-- tenant), the protocol version they speak (NULL before they said) and
-- their certificate: when it expires
-- (NULL: none), whether it is valid now, and whether it outlives
-- certified_margin. only_host, when given, keeps that host alone: a
-- restore runs where its snapshot's files are.
-- name: PlacementCandidates :many
SELECT h.id, h.name, h.protocol, h.cert_not_after,
       coalesce(h.cert_not_after > now(), false)::boolean AS certified,
       coalesce(h.cert_not_after > now() + make_interval(secs => @certified_margin::float8), false)::boolean AS outlives_margin,
       c.vcpus, c.memory_mb, c.disk_gb,
       coalesce(sum(u.vcpus), 0)::bigint AS used_vcpus,
       coalesce(sum(u.memory_mb), 0)::bigint AS used_memory_mb,
       coalesce(sum(u.disk_gb), 0)::bigint AS used_disk_gb,
       coalesce(sum(u.allocations), 0)::int AS allocations,
       coalesce(bool_and(u.tenant_id = @tenant::uuid), true)::boolean AS only_tenant
FROM hosts h
JOIN host_capacity c ON c.host_id = h.id
LEFT JOIN host_usage u ON u.host_id = h.id AND u.allocations > 0
WHERE h.pool_id = @pool AND NOT h.draining
  AND (sqlc.narg(only_host)::uuid IS NULL OR h.id = sqlc.narg(only_host))
  AND h.last_seen_at > now() - make_interval(secs => @silent_after::float8)
GROUP BY h.id, c.host_id
ORDER BY h.id;

-- FreeGPUs lists the unclaimed, healthy GPUs of a model on some hosts.
-- name: FreeGPUs :many
SELECT g.host_id, g.address FROM host_gpus g
WHERE g.host_id = ANY(@hosts::uuid[]) AND g.model = @model AND g.unhealthy_since IS NULL
  AND NOT EXISTS (SELECT 1 FROM device_claims d WHERE d.host_id = g.host_id AND d.address = g.address AND d.released_at IS NULL)
ORDER BY g.host_id, g.address;

-- AllocateOnHosts records instances' allocations, each on its host, and
-- bumps each host's spec generation once, returning them: placement's
-- writes to the hosts in one round trip, for one instance or a batch.
-- name: AllocateOnHosts :many
WITH allocation AS (
    INSERT INTO allocations (id, host_id, tenant_id, instance_id, vcpus, memory_mb, disk_gb)
    SELECT unnest(@allocation_ids::uuid[]), unnest(@host_ids::uuid[]), unnest(@tenant_ids::uuid[]),
        unnest(@instance_ids::uuid[]), unnest(@vcpus::int[]), unnest(@memory_mb::bigint[]), unnest(@disk_gb::bigint[])
)
UPDATE hosts SET spec_generation = spec_generation + 1 WHERE hosts.id = ANY(@host_ids::uuid[])
RETURNING hosts.id, hosts.spec_generation;

-- name: InsertDeviceClaim :exec
INSERT INTO device_claims (id, host_id, address, instance_id) VALUES ($1, $2, $3, $4);

-- LeaseNextAddresses leases instances, in the order given, the addresses
-- after the highest one leased in the first of their pool's ranges with
-- room above its leases (a range's start when it has none leased), as many
-- as that range has room for, each with its address's MAC (mac_for): one
-- statement for a batch of placements. The highest lease is one step down
-- the live leases' index, so a fleet's placements do not slow as leases
-- grow; an address freed below is found by LeaseFreeAddress once the
-- ranges are full up to their ends. The rows come in no set order; an
-- instance without one found no room above the leases.
-- name: LeaseNextAddresses :many
INSERT INTO ip_leases (id, ip_pool_id, address, mac, instance_id)
SELECT n.id, r.id, r.next + (n.ord - 1), mac_for(r.next + (n.ord - 1)), n.instance_id
FROM (
    SELECT p.id, coalesce(l.top + 1, p.range_start) AS next, p.range_end
    FROM ip_pools p
    CROSS JOIN LATERAL (SELECT max(address) AS top FROM ip_leases WHERE ip_pool_id = p.id AND released_at IS NULL) l
    WHERE p.pool_id = @pool_id AND coalesce(l.top + 1, p.range_start) <= p.range_end
    ORDER BY p.created_at
    LIMIT 1
) r
CROSS JOIN (SELECT unnest(@ids::uuid[]) AS id, unnest(@instance_ids::uuid[]) AS instance_id,
    generate_series(1, cardinality(@ids::uuid[])) AS ord) n
WHERE r.next + (n.ord - 1) <= r.range_end
RETURNING *;

-- LeaseFreeAddress leases an instance the lowest free address of its
-- pool's ranges: it scans them, so it is the fallback of LeaseNextAddresses.
-- No row: none is free.
-- name: LeaseFreeAddress :one
INSERT INTO ip_leases (id, ip_pool_id, address, mac, instance_id)
SELECT @id, p.id, p.range_start + g.n, mac_for(p.range_start + g.n), @instance_id
FROM ip_pools p
CROSS JOIN LATERAL generate_series(0::bigint, (p.range_end - p.range_start)::bigint) AS g(n)
WHERE p.pool_id = @pool_id
  AND NOT EXISTS (SELECT 1 FROM ip_leases l WHERE l.ip_pool_id = p.id AND l.address = p.range_start + g.n AND l.released_at IS NULL)
ORDER BY p.created_at, g.n
LIMIT 1
RETURNING *;

-- name: HasIPPools :one
SELECT EXISTS (SELECT 1 FROM ip_pools WHERE pool_id = $1);


-- LockPendingPlain locks, skipping those another transaction holds, up to
-- lim of a pool's pending instances of one tenant that need only a host
-- and an address (no sandbox, warm template, restore, GPU or kept lease),
-- oldest first: what a placement holding the pool's lock places beside
-- its own. An instance without a MAC has no lease: a lease is taken only
-- by placement, which sets the MAC in the same transaction, and a MAC is
-- never cleared. The MAC says so without reading the leases, which a plan
-- made on statistics older than the fleet read whole for each instance.
-- name: LockPendingPlain :many
SELECT i.* FROM instances i
WHERE i.pool_id = @pool_id AND i.state = 'PENDING' AND i.tenant_id = @tenant_id AND i.id <> @placed_id
  AND i.sandbox_id IS NULL AND i.warm_template_id IS NULL AND i.restore_from IS NULL AND i.gpu_count = 0
  AND i.mac IS NULL
ORDER BY i.created_at
LIMIT @lim
FOR NO KEY UPDATE OF i SKIP LOCKED;
