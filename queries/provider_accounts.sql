-- name: CreateProviderAccount :one
INSERT INTO provider_accounts (id, tenant_id, provider, name, credentials_sealed, settings)
VALUES ($1, $2, $3, $4, $5, $6) RETURNING *;

-- name: GetProviderAccount :one
SELECT * FROM provider_accounts WHERE id = $1 AND deleted_at IS NULL;

-- ListProviderAccounts lists the accounts a tenant may see (its own and
-- shared ones), or every account when tenant is NULL.
-- name: ListProviderAccounts :many
SELECT * FROM provider_accounts
WHERE deleted_at IS NULL
  AND (sqlc.narg(tenant)::uuid IS NULL OR tenant_id IS NULL OR tenant_id = sqlc.narg(tenant))
ORDER BY name, id;

-- name: LockProviderAccount :one
SELECT * FROM provider_accounts WHERE id = $1 AND deleted_at IS NULL FOR UPDATE;

-- ProviderAccountInUse reports whether live instances run in pools of the account.
-- name: ProviderAccountInUse :one
SELECT EXISTS (
    SELECT 1 FROM instances i JOIN pools p ON p.id = i.pool_id
    WHERE p.provider_account_id = $1 AND i.state <> 'DELETED'
);

-- name: UpdateProviderAccount :one
UPDATE provider_accounts SET credentials_sealed = @credentials_sealed, settings = @settings
WHERE id = @id RETURNING *;

-- name: SoftDeleteProviderAccount :exec
UPDATE provider_accounts SET deleted_at = now() WHERE id = $1;

-- DeleteUnusedTenantAccounts deletes a tenant's provider accounts that
-- no pool uses: no server was ever made with them.
-- name: DeleteUnusedTenantAccounts :execrows
UPDATE provider_accounts a SET deleted_at = now()
WHERE a.tenant_id = $1 AND a.deleted_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM pools p WHERE p.provider_account_id = a.id);

-- DeleteSweptTenantAccount deletes the provider account of a deleted
-- tenant once a sweep whose listing began at listed_at (its claim) showed
-- it no server of ours: every instance of its pools was DELETED before
-- then, and no orphan of it is left to delete.
-- name: DeleteSweptTenantAccount :execrows
UPDATE provider_accounts a SET deleted_at = now()
FROM tenants t
WHERE a.id = @account_id AND t.id = a.tenant_id AND t.deleted_at IS NOT NULL AND a.deleted_at IS NULL
  AND NOT EXISTS (
    SELECT 1 FROM instances i JOIN pools p ON p.id = i.pool_id
    WHERE p.provider_account_id = a.id AND (i.state <> 'DELETED' OR i.updated_at >= @listed_at))
  AND NOT EXISTS (SELECT 1 FROM provider_orphans o WHERE o.account_id = a.id);
