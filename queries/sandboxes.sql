-- name: InsertSandbox :one
INSERT INTO sandboxes (id, tenant_id, template_id, template_version, started_from, metadata, expires_at, idempotency_key, from_snapshot)
VALUES (@id, @tenant_id, @template_id, @template_version, @started_from, @metadata,
        now() + make_interval(secs => @timeout_s::int), sqlc.narg(idempotency_key), sqlc.narg(from_snapshot))
RETURNING *;

-- name: GetSandbox :one
SELECT * FROM sandbox_views WHERE id = $1;

-- LockSandbox locks a sandbox's row; its instance is locked on its own.
-- name: LockSandbox :one
-- FOR NO KEY UPDATE, not FOR UPDATE: a transaction that changes a sandbox's
-- instance twice checks the instance's deferred foreign key to its sandbox
-- at commit (FOR KEY SHARE), which FOR UPDATE would block while the holder
-- waits for that instance: a deadlock.
SELECT id FROM sandboxes WHERE id = $1 FOR NO KEY UPDATE;

-- name: LockSandboxInstance :one
SELECT * FROM instances WHERE sandbox_id = $1 FOR UPDATE;

-- name: GetSandboxByIdempotencyKey :one
SELECT * FROM sandbox_views WHERE tenant_id = $1 AND idempotency_key = $2;

-- ListSandboxes pages newest first. A NULL argument does not filter;
-- metadata filters by containment (every pair given).
-- It reads a page between the IDs lo and hi; ListSandboxesAsc reads the same
-- page oldest first (control.keyset).
-- name: ListSandboxes :many
SELECT * FROM sandbox_views
WHERE (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant))
  AND (sqlc.narg(template)::uuid IS NULL OR template_id = sqlc.narg(template))
  AND (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state))
  AND (sqlc.narg(metadata)::jsonb IS NULL OR metadata @> sqlc.narg(metadata))
  AND (sqlc.narg(lo)::uuid IS NULL OR id > sqlc.narg(lo))
  AND (sqlc.narg(hi)::uuid IS NULL OR id < sqlc.narg(hi))
ORDER BY id DESC
LIMIT @lim;

-- name: ListSandboxesAsc :many
SELECT * FROM sandbox_views
WHERE (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant))
  AND (sqlc.narg(template)::uuid IS NULL OR template_id = sqlc.narg(template))
  AND (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state))
  AND (sqlc.narg(metadata)::jsonb IS NULL OR metadata @> sqlc.narg(metadata))
  AND (sqlc.narg(lo)::uuid IS NULL OR id > sqlc.narg(lo))
  AND (sqlc.narg(hi)::uuid IS NULL OR id < sqlc.narg(hi))
ORDER BY id
LIMIT @lim;

-- name: CountSandboxes :one
SELECT count(*) FROM sandbox_views
WHERE (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant))
  AND (sqlc.narg(template)::uuid IS NULL OR template_id = sqlc.narg(template))
  AND (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state))
  AND (sqlc.narg(metadata)::jsonb IS NULL OR metadata @> sqlc.narg(metadata));

-- SetSandboxExpiry sets a sandbox's deadline timeout_s seconds from now.
-- name: SetSandboxExpiry :exec
UPDATE sandboxes SET expires_at = now() + make_interval(secs => @timeout_s::int), version = version + 1, updated_at = now()
WHERE id = @id;

-- TouchSandbox records a change of a sandbox made through its instance.
-- name: TouchSandbox :exec
UPDATE sandboxes SET version = version + 1, updated_at = now() WHERE id = $1;

-- EndSandbox records how a sandbox ended (EXPIRED or DELETED), once.
-- name: EndSandbox :execrows
UPDATE sandboxes SET ended_as = @ended_as::text, ended_at = now(), version = version + 1, updated_at = now()
WHERE id = @id AND ended_as IS NULL;
