-- Transition is the reconciler's one guarded write: a compare-and-set on the
-- state and version it read under the row lock.
-- name: Transition :one
UPDATE instances SET
    state = @to_state,
    state_reason = @state_reason,
    host_id = @host_id,
    spec_power = @spec_power,
    spec_generation = @spec_generation,
    mac = @mac,
    avoid_host_id = @avoid_host_id,
    observed_state = @observed_state,
    observed_reason = @observed_reason,
    host_certified = @host_certified,
    host_cert_valid_before = @host_cert_valid_before,
    reboot_command_id = CASE WHEN @to_state::text = 'REBOOTING' THEN reboot_command_id END,
    version = version + 1,
    updated_at = clock_timestamp()
WHERE id = @id AND state = @from_state AND version = @from_version
RETURNING *;

-- PlaceInstances moves pending instances to PROVISIONING, each on its
-- host with its MAC, as Transition moves one: compared and set on the
-- version read under its row lock. An instance that changed since is not
-- returned.
-- name: PlaceInstances :many
UPDATE instances i SET
    state = 'PROVISIONING', state_reason = '', host_id = u.host_id, spec_power = u.spec_power,
    spec_generation = u.spec_generation, mac = u.mac, observed_state = NULL, observed_reason = '',
    host_certified = u.certified,
    host_cert_valid_before = CASE WHEN u.certified THEN u.cert_valid_before END,
    version = i.version + 1, updated_at = clock_timestamp()
FROM (SELECT unnest(@ids::uuid[]) AS id, unnest(@versions::bigint[]) AS version,
    unnest(@host_ids::uuid[]) AS host_id, unnest(@spec_powers::text[]) AS spec_power,
    unnest(@spec_generations::bigint[]) AS spec_generation, unnest(@macs::text[]) AS mac,
    unnest(@certified::boolean[]) AS certified, unnest(@cert_valid_before::timestamptz[]) AS cert_valid_before) u
WHERE i.id = u.id AND i.state = 'PENDING' AND i.version = u.version
RETURNING i.*;

-- SetRebootCommand records the command that reboots a REBOOTING instance.
-- name: SetRebootCommand :one
UPDATE instances SET reboot_command_id = @command_id, version = version + 1, updated_at = clock_timestamp()
WHERE id = @id AND state = 'REBOOTING' AND version = @version
RETURNING *;

-- RebootedBy finds the instance a reboot command is for, if it still is.
-- name: RebootedBy :many
SELECT id FROM instances WHERE reboot_command_id = $1;

-- name: SetStateReason :one
UPDATE instances SET state_reason = @state_reason, version = version + 1, updated_at = clock_timestamp()
WHERE id = @id AND version = @version
RETURNING *;

-- name: BumpHostGeneration :one
UPDATE hosts SET spec_generation = spec_generation + 1 WHERE id = $1 RETURNING spec_generation;

-- HostLiveness reads what the reconciler needs of a host.
-- name: HostLiveness :one
SELECT id, name, pool_id, last_seen_at, (last_seen_at > now() - make_interval(secs => @silent_after::float8))::boolean AS alive
FROM hosts WHERE id = @id;

-- name: ReleaseAllocation :execrows
UPDATE allocations SET released_at = now() WHERE instance_id = $1 AND released_at IS NULL;

-- name: ReleaseDeviceClaims :execrows
UPDATE device_claims SET released_at = now() WHERE instance_id = $1 AND released_at IS NULL;

-- name: ReleaseLeases :execrows
UPDATE ip_leases SET released_at = now() WHERE instance_id = $1 AND released_at IS NULL;

-- PendingInPool lists instances waiting for room in a pool, oldest first.
-- name: PendingInPool :many
SELECT id FROM instances WHERE pool_id = $1 AND state = 'PENDING' AND desired_state <> 'DELETED'
ORDER BY created_at LIMIT 100;

-- Unsettled lists instances the reconciler still has work on: not at their
-- desired state, or on a host that has gone silent.
-- name: Unsettled :many
SELECT i.id FROM instances i
WHERE (i.state <> i.desired_state AND i.state NOT IN ('DELETED', 'ERROR'))
   OR (i.state = 'ERROR' AND i.desired_state = 'DELETED')
   OR (i.host_id IS NOT NULL AND i.state NOT IN ('DELETED', 'PENDING', 'LOST', 'ERROR') AND EXISTS (
        SELECT 1 FROM hosts h WHERE h.id = i.host_id
          AND (h.last_seen_at IS NULL OR h.last_seen_at <= now() - make_interval(secs => @silent_after::float8))));

-- LockInstanceStep takes an instance's row lock for a reconciler's step, as
-- LockInstance does, and reads with it, in the same round trip, what the
-- step decides on and writes its events with: its host's name and liveness
-- (as HostLiveness says it; not alive when it has no host) and the addresses
-- and MACs of its live leases, oldest first (as ListLiveLeases orders them).
-- Those are as of the row returned only when fresh: a row updated while the
-- statement waited for its lock comes back as it is now, but Postgres
-- re-checks only the locked row, so the host and leases beside it are of
-- the row before (a placement that committed meanwhile: no host, no lease),
-- and are to be read again.
-- name: LockInstanceStep :one
SELECT sqlc.embed(i),
       ((SELECT s.xmin FROM instances s WHERE s.id = i.id) = i.xmin)::boolean AS fresh,
       coalesce(h.name, '')::text AS host_name,
       coalesce(h.last_seen_at > now() - make_interval(secs => @silent_after::float8), false)::boolean AS host_alive,
       l.addresses::inet[] AS lease_addresses,
       l.macs::text[] AS lease_macs
FROM instances i
LEFT JOIN hosts h ON h.id = i.host_id
CROSS JOIN LATERAL (
    SELECT coalesce(array_agg(address ORDER BY leased_at), '{}') AS addresses,
           coalesce(array_agg(mac ORDER BY leased_at), '{}') AS macs
    FROM ip_leases WHERE instance_id = i.id AND released_at IS NULL) l
WHERE i.id = @id
FOR NO KEY UPDATE OF i;
