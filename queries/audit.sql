-- name: InsertAuditEvent :exec
INSERT INTO audit_events (principal_id, tenant_id, action, target_type, target_id, request_id, outcome, error_code, details)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- ListAuditEvents pages newest first. A NULL argument does not filter.
-- name: ListAuditEvents :many
SELECT * FROM audit_events
WHERE (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant))
  AND (sqlc.narg(action)::text IS NULL OR action = sqlc.narg(action))
  AND (sqlc.narg(target)::uuid IS NULL OR target_id = sqlc.narg(target))
  AND (sqlc.narg(outcome)::text IS NULL OR outcome = sqlc.narg(outcome))
  AND (sqlc.narg(after)::bigint IS NULL OR id < sqlc.narg(after))
ORDER BY id DESC
LIMIT @lim;

-- name: CountAuditEvents :one
SELECT count(*) FROM audit_events
WHERE (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant))
  AND (sqlc.narg(action)::text IS NULL OR action = sqlc.narg(action))
  AND (sqlc.narg(target)::uuid IS NULL OR target_id = sqlc.narg(target))
  AND (sqlc.narg(outcome)::text IS NULL OR outcome = sqlc.narg(outcome));

-- name: GetAuditEvent :one
SELECT * FROM audit_events WHERE id = $1;
