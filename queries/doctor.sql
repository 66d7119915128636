-- The situations doctor reports, each a query of its own.

-- name: DoctorHostedPools :many
SELECT p.id, p.name, p.runtime, p.single_tenant,
       EXISTS (SELECT 1 FROM ip_pools r WHERE r.pool_id = p.id) AS has_ip_range
FROM pools p WHERE p.class = 'vps-host' ORDER BY p.name;

-- name: DoctorHostsWithoutCapacity :many
SELECT h.id, h.name FROM hosts h
WHERE NOT EXISTS (SELECT 1 FROM host_capacity c WHERE c.host_id = h.id)
ORDER BY h.name;

-- DoctorSilentHosts are the hosts that reported once but not since before
-- @since.
-- name: DoctorSilentHosts :many
SELECT id, name, last_seen_at::timestamptz AS last_seen_at FROM hosts
WHERE last_seen_at IS NOT NULL AND last_seen_at < @since::timestamptz ORDER BY name;

-- DoctorHeldByDeleted lists what DELETED instances still hold: live
-- allocations, device claims and IP leases, by kind.
-- name: DoctorHeldByDeleted :many
SELECT 'allocation'::text AS kind, a.id, a.instance_id FROM allocations a
  JOIN instances i ON i.id = a.instance_id
  WHERE a.released_at IS NULL AND i.state = 'DELETED'
UNION ALL
SELECT 'device claim', d.id, d.instance_id FROM device_claims d
  JOIN instances i ON i.id = d.instance_id
  WHERE d.released_at IS NULL AND i.state = 'DELETED'
UNION ALL
SELECT 'IP lease', l.id, l.instance_id FROM ip_leases l
  JOIN instances i ON i.id = l.instance_id
  WHERE l.released_at IS NULL AND i.state = 'DELETED'
ORDER BY 1, 3;

-- DoctorStuckInstances are the instances in a transitional state that
-- has not changed since before @since.
-- name: DoctorStuckInstances :many
SELECT id, state, state_reason, updated_at FROM instances
WHERE state IN ('PENDING', 'PROVISIONING', 'STARTING', 'STOPPING', 'REBOOTING', 'DELETING')
  AND updated_at < @since::timestamptz
ORDER BY updated_at LIMIT 100;

-- name: DoctorProviderOrphans :many
SELECT account_id, server_id, instance_label, first_seen_at FROM provider_orphans
ORDER BY first_seen_at LIMIT 100;

-- DoctorStaleSealed counts, by kind, the sealed values another key than
-- @key_id sealed (bytes 2 to 5 of a sealed value name its key).
-- name: DoctorStaleSealed :many
SELECT 'instance user data'::text AS kind, count(*) AS n FROM instances
  WHERE user_data_sealed IS NOT NULL AND substring(user_data_sealed from 2 for 4) <> @key_id::bytea
UNION ALL
SELECT 'instance env', count(*) FROM instances
  WHERE env_sealed IS NOT NULL AND substring(env_sealed from 2 for 4) <> @key_id::bytea
UNION ALL
SELECT 'provider account credentials', count(*) FROM provider_accounts
  WHERE substring(credentials_sealed from 2 for 4) <> @key_id::bytea
UNION ALL
SELECT 'sandbox template env', count(*) FROM sandbox_templates
  WHERE env IS NOT NULL AND substring(env from 2 for 4) <> @key_id::bytea;

-- DoctorHostCertificates are the hosts holding live instances whose
-- certificate expires before @before (lapsed when it is past), with how
-- many live instances they hold and how many of those are in pools that
-- require certified hosts.
-- name: DoctorHostCertificates :many
SELECT h.id, h.name, h.cert_not_after::timestamptz AS cert_not_after,
       count(*)::int AS instances,
       count(*) FILTER (WHERE p.require_certified_hosts)::int AS in_certified_pools
FROM hosts h
JOIN instances i ON i.host_id = h.id AND i.state NOT IN ('PENDING', 'DELETED')
JOIN pools p ON p.id = i.pool_id
WHERE h.cert_not_after < @before::timestamptz
GROUP BY h.id
ORDER BY h.cert_not_after, h.name;

-- DoctorUnhealthyGPUs are the GPUs marked unhealthy, by host and address,
-- with the Xid that marked them and the live instance holding each, if
-- any.
-- name: DoctorUnhealthyGPUs :many
SELECT g.host_id, h.name AS host_name, g.address, g.model, g.unhealthy_since::timestamptz AS unhealthy_since,
       g.health_reason, g.last_xid, d.instance_id AS holder
FROM host_gpus g
JOIN hosts h ON h.id = g.host_id
LEFT JOIN device_claims d ON d.host_id = g.host_id AND d.address = g.address AND d.released_at IS NULL
WHERE g.unhealthy_since IS NOT NULL
ORDER BY h.name, g.host_id, g.address;
