-- ExpiredSandboxes lists live sandboxes past their deadline, the longest
-- overdue first.
-- name: ExpiredSandboxes :many
SELECT id FROM sandboxes WHERE ended_as IS NULL AND expires_at <= now()
ORDER BY expires_at LIMIT @lim;

-- ExpireSandbox ends a sandbox as EXPIRED if it is still live and past its
-- deadline when its row is locked: a setSandboxTimeout that moved the
-- deadline first wins.
-- name: ExpireSandbox :one
UPDATE sandboxes SET ended_as = 'EXPIRED', ended_at = now(), version = version + 1, updated_at = now()
WHERE id = $1 AND ended_as IS NULL AND expires_at <= now()
RETURNING *;

-- TemplatesForUpkeep lists the templates whose warm pools want looking at:
-- the live ones with a warm count, and any with free warm instances not yet
-- asked to go (a deleted template's, or one whose count dropped to 0).
-- name: TemplatesForUpkeep :many
SELECT id FROM sandbox_templates WHERE deleted_at IS NULL AND warm_count > 0
UNION
SELECT DISTINCT warm_template_id::uuid FROM instances
WHERE warm_template_id IS NOT NULL AND claimed_at IS NULL AND desired_state <> 'DELETED';

-- TemplateForUpkeep reads a template, deleted or not.
-- name: TemplateForUpkeep :one
SELECT * FROM sandbox_templates WHERE id = $1;

-- FreeWarmInstances lists a template's warm instances that no sandbox
-- claimed and that are not asked to go.
-- name: FreeWarmInstances :many
SELECT * FROM instances
WHERE warm_template_id = @template_id::uuid AND claimed_at IS NULL AND desired_state <> 'DELETED'
ORDER BY id;

-- RetireWarmInstances asks for free warm instances to be deleted; one a
-- sandbox claimed meanwhile is left alone.
-- name: RetireWarmInstances :many
UPDATE instances SET desired_state = 'DELETED', version = version + 1, updated_at = clock_timestamp()
WHERE id = ANY(@ids::uuid[]) AND claimed_at IS NULL AND desired_state <> 'DELETED'
RETURNING *;

-- TryUpkeepLock takes the lock of one template's upkeep for the rest of
-- the transaction, if no other reconciler holds it: a transaction-level
-- advisory lock in the space of sandbox upkeeps.
-- name: TryUpkeepLock :one
SELECT pg_try_advisory_xact_lock(@space::int, hashtext(@template_key::text));
