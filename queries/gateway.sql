-- name: HostByCredential :one
SELECT * FROM hosts WHERE credential_hash = $1;

-- name: HostGeneration :one
SELECT spec_generation FROM hosts WHERE id = $1;

-- SpecInstances lists what a host must run whose entry changed after
-- generation @after (0: all of it; every entry's generation is above 0).
-- name: SpecInstances :many
SELECT * FROM instances WHERE host_id = @host AND spec_power IS NOT NULL AND spec_generation > @after ORDER BY id;

-- SpecEntries lists the instances a host must run, each with the
-- generation at which its entry last changed, reading nothing else: what a
-- spec delta says of the entries the host holds.
-- name: SpecEntries :many
SELECT id, spec_generation FROM instances WHERE host_id = @host AND spec_power IS NOT NULL ORDER BY id;

-- SpecLeases gives the network of a host's instances whose entry changed
-- after generation @after.
-- name: SpecLeases :many
SELECT l.instance_id, l.address, l.mac, p.cidr, p.gateway, p.dns
FROM ip_leases l JOIN ip_pools p ON p.id = l.ip_pool_id
WHERE l.released_at IS NULL AND l.instance_id IN (
    SELECT id FROM instances WHERE host_id = @host AND spec_power IS NOT NULL AND spec_generation > @after);

-- SpecDevices gives the claimed devices of a host's instances whose entry
-- changed after generation @after.
-- name: SpecDevices :many
SELECT d.instance_id, d.address FROM device_claims d JOIN instances i ON i.id = d.instance_id
WHERE d.host_id = @host AND d.released_at IS NULL AND i.spec_generation > @after
ORDER BY d.instance_id, d.address;

-- SetHostProtocol records the protocol version a host speaks; it changes
-- (and counts) a row only when the version is new.
-- name: SetHostProtocol :execrows
UPDATE hosts SET protocol = @protocol WHERE id = @id AND protocol IS DISTINCT FROM @protocol;

-- HostReportState reads what a report is checked against: when the host was
-- last seen, the generation it was sent and the one it last reported, and
-- whether it has a capacity (which its inventory need not set again).
-- name: HostReportState :one
SELECT last_seen_at, spec_generation, reported_generation,
    EXISTS (SELECT 1 FROM host_capacity c WHERE c.host_id = hosts.id) AS has_capacity
FROM hosts WHERE id = $1;

-- RecordReport notes a host's report. The reported generation never goes
-- down: a late report of an older one is only a heartbeat.
-- name: RecordReport :exec
UPDATE hosts SET last_seen_at = now(), reported_generation = greatest(reported_generation, @generation),
    inventory = coalesce(sqlc.narg(inventory)::jsonb, inventory)
WHERE id = @id;

-- ObserveReported records what a host saw of the instances it reported,
-- for those whose spec entry it has converged to (each status's
-- generation at least the entry's), and returns the ones that changed.
-- name: ObserveReported :many
UPDATE instances i SET observed_state = r.state, observed_reason = r.reason, observed_at = now()
FROM (SELECT unnest(@ids::uuid[]) AS id, unnest(@states::text[]) AS state, unnest(@reasons::text[]) AS reason,
    unnest(@generations::bigint[]) AS generation) AS r
WHERE i.id = r.id AND i.host_id = @host AND i.spec_generation <= r.generation
  AND i.state NOT IN ('PENDING', 'DELETED')
  AND (i.observed_state IS DISTINCT FROM r.state OR i.observed_reason <> r.reason)
RETURNING i.id;

-- ObserveAbsent records that a host no longer has the instances assigned to
-- it that it did not report (a whole report), or (@gone not NULL, a
-- partial report) those of @gone it said it no longer has.
-- name: ObserveAbsent :many
UPDATE instances SET observed_state = 'absent', observed_reason = '', observed_at = now()
WHERE host_id = @host AND spec_generation <= @generation
  AND state NOT IN ('PENDING', 'DELETED')
  AND id <> ALL(@reported::uuid[])
  AND (sqlc.narg(gone)::uuid[] IS NULL OR id = ANY(sqlc.narg(gone)::uuid[]))
  AND observed_state IS DISTINCT FROM 'absent'
RETURNING id;

-- name: ResetHostCredential :one
UPDATE hosts SET credential_hash = $2 WHERE id = $1 RETURNING *;

-- name: HostByName :one
SELECT * FROM hosts WHERE name = $1;

-- HostInstances lists the instances placed on a host, to wake them when
-- the host comes back from silence.
-- name: HostInstances :many
SELECT id FROM instances WHERE host_id = $1 AND state NOT IN ('PENDING', 'DELETED');

-- AdoptInventoryCapacity sets a host's capacity from its first inventory,
-- unless an operator already set it.
-- name: AdoptInventoryCapacity :exec
INSERT INTO host_capacity (host_id, vcpus, memory_mb, disk_gb) VALUES ($1, $2, $3, $4)
ON CONFLICT (host_id) DO NOTHING;

-- name: AdoptInventoryGPU :exec
INSERT INTO host_gpus (host_id, address, vendor, model) VALUES ($1, $2, $3, $4)
ON CONFLICT (host_id, address) DO NOTHING;

-- PoolRuntime is the runtime a host's pool runs.
-- name: PoolRuntime :one
SELECT runtime FROM pools WHERE id = $1;

-- SetHostRuntime records the runtime a host's daemon says it runs.
-- name: SetHostRuntime :exec
UPDATE hosts SET runtime = @runtime WHERE id = @id;
