-- The sandbox metrics, each served by a partial index of
-- vps/0010_sandbox_metric_indexes or 0015_sandbox_events. A NULL template
-- reads every template's; a NULL tenant counts every tenant's sandboxes.

-- LiveSandboxesByState counts the sandboxes that have not ended, by
-- template and state (sandboxes_template_live).
-- name: LiveSandboxesByState :many
SELECT v.template_id, v.state::text AS state, count(*)::int AS n
FROM sandbox_views v
WHERE v.ended_as IS NULL
  AND (sqlc.narg(template)::uuid IS NULL OR v.template_id = sqlc.narg(template))
  AND (sqlc.narg(tenant)::uuid IS NULL OR v.tenant_id = sqlc.narg(tenant))
GROUP BY v.template_id, v.state;

-- WarmPoolFill counts each template's free warm instances of its current
-- instance version, and how many of them are ready: paused
-- (instances_warm_free).
-- name: WarmPoolFill :many
SELECT t.id AS template_id, t.warm_count,
       count(i.id)::int AS free,
       count(i.id) FILTER (WHERE i.state = 'PAUSED')::int AS ready
FROM sandbox_templates t
LEFT JOIN instances i ON i.warm_template_id = t.id AND i.claimed_at IS NULL
     AND i.warm_template_version = t.instance_version AND i.desired_state = 'PAUSED'
WHERE t.deleted_at IS NULL
  AND (sqlc.narg(template)::uuid IS NULL OR t.id = sqlc.narg(template))
GROUP BY t.id, t.warm_count;

-- WarmClaims counts the warm instances of each template claimed since a
-- time, by sandboxes of a tenant: a claimed instance moves to its
-- sandbox's tenant (instances_warm_claimed).
-- name: WarmClaims :many
SELECT warm_template_id::uuid AS template_id, count(*)::int AS n
FROM instances
WHERE claimed_at IS NOT NULL AND claimed_at >= @since
  AND (sqlc.narg(template)::uuid IS NULL OR warm_template_id = sqlc.narg(template))
  AND (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant))
GROUP BY warm_template_id;

-- SandboxStarts counts the sandboxes of each template created since a
-- time, warm and cold, and the seconds from their creation to RUNNING,
-- p50 and p99 (0 when none ran), of those that ran (sandboxes_template_created,
-- sandbox_events_started).
-- name: SandboxStarts :many
SELECT s.template_id, s.started_from, count(*)::int AS created, count(e.at)::int AS started,
       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM e.at - s.created_at)), 0)::double precision AS p50,
       coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM e.at - s.created_at)), 0)::double precision AS p99
FROM sandboxes s
LEFT JOIN sandbox_events e ON e.sandbox_id = s.id AND e.type = 'STARTED'
WHERE s.created_at >= @since
  AND (sqlc.narg(template)::uuid IS NULL OR s.template_id = sqlc.narg(template))
  AND (sqlc.narg(tenant)::uuid IS NULL OR s.tenant_id = sqlc.narg(tenant))
GROUP BY s.template_id, s.started_from;
