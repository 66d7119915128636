-- PoolProviderAccount is the provider account of an instance's pool, NULL
-- for a hosted pool.
-- name: PoolProviderAccount :one
SELECT provider_account_id FROM pools WHERE id = $1;

-- ProviderCatalog reads what a flavor and an image are called at a
-- provider; '' where they have no counterpart there.
-- name: ProviderCatalog :one
SELECT coalesce((SELECT f.provider_types ->> @provider::text FROM flavors f WHERE f.id = @flavor_id::uuid), '')::text AS server_type,
       coalesce((SELECT i.provider_images ->> @provider::text FROM images i WHERE i.id = @image_id::uuid), '')::text AS image;

-- SetProviderServer records what a call to the provider made of the
-- instance's server. Its caller then transitions the instance, which
-- versions the change and writes its event.
-- name: SetProviderServer :exec
UPDATE instances SET
    provider_server_id = @server_id,
    provider_server_at = @server_at,
    provider_status = @status,
    provider_addresses = @addresses,
    observed_at = @observed_at
WHERE id = @id;

-- ObserveProviderServer records what a sweep saw of an instance's server,
-- unless a call since the sweep's list began knows better; it reports
-- whether anything changed.
-- name: ObserveProviderServer :execrows
UPDATE instances SET provider_status = @status, provider_addresses = @addresses, observed_at = @listed_at
WHERE id = @id AND provider_server_id = @server_id::text
  AND (observed_at IS NULL OR observed_at < @listed_at)
  AND (provider_status IS DISTINCT FROM @status OR provider_addresses <> @addresses);

-- ProviderInstances lists the live instances of an account's pools.
-- name: ProviderInstances :many
SELECT i.id, i.provider_server_id, i.provider_server_at
FROM instances i JOIN pools p ON p.id = i.pool_id
WHERE p.provider_account_id = $1 AND i.state <> 'DELETED';

-- LiveInstances returns those of ids that are live instances, in any pool.
-- name: LiveInstances :many
SELECT id FROM instances WHERE id = ANY(@ids::uuid[]) AND state <> 'DELETED';

-- ProviderAccountsToSweep lists the live accounts a pool uses: an account
-- no pool uses has no instances to observe, and is never called.
-- name: ProviderAccountsToSweep :many
SELECT * FROM provider_accounts a
WHERE a.deleted_at IS NULL AND EXISTS (SELECT 1 FROM pools p WHERE p.provider_account_id = a.id)
ORDER BY a.id;

-- ClaimSweep takes an account's sweep when none was made within the
-- interval, so reconcilers together list each account once an interval,
-- and returns when it was taken; no row when it was not.
-- name: ClaimSweep :many
INSERT INTO provider_sweeps (account_id, swept_at) VALUES (@account_id, now())
ON CONFLICT (account_id) DO UPDATE SET swept_at = now()
WHERE provider_sweeps.swept_at <= now() - make_interval(secs => @interval_seconds::float8)
RETURNING swept_at;

-- name: NoteOrphan :exec
INSERT INTO provider_orphans (account_id, server_id, instance_label) VALUES ($1, $2, $3)
ON CONFLICT (account_id, server_id) DO NOTHING;

-- ForgetOrphansExcept drops the orphans of an account a sweep no longer
-- saw as orphans.
-- name: ForgetOrphansExcept :exec
DELETE FROM provider_orphans WHERE account_id = @account_id AND NOT (server_id = ANY(@server_ids::text[]));

-- DueOrphans lists an account's orphans older than the grace period.
-- name: DueOrphans :many
SELECT * FROM provider_orphans
WHERE account_id = @account_id AND first_seen_at <= now() - make_interval(secs => @grace_seconds::float8)
ORDER BY first_seen_at;

-- name: ForgetOrphan :exec
DELETE FROM provider_orphans WHERE account_id = $1 AND server_id = $2;
