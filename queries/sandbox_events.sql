-- InsertSandboxEvent records a step of a sandbox's life as the next of its
-- events. Its caller holds the sandbox's instance's row lock, which every
-- writer of a sandbox's events holds, so the numbers follow commit order;
-- the unique (sandbox_id, seq) guards it.
-- name: InsertSandboxEvent :one
INSERT INTO sandbox_events (sandbox_id, tenant_id, seq, type, reason, sandbox)
VALUES (@sandbox_id, @tenant_id,
        (SELECT coalesce(max(seq), 0) + 1 FROM sandbox_events WHERE sandbox_id = @sandbox_id),
        @type, @reason, @sandbox)
RETURNING *;

-- SandboxEventsSoFar says what a sandbox's events said so far: whether it
-- started, and its last event's type and the state that event left.
-- name: SandboxEventsSoFar :one
SELECT EXISTS (SELECT 1 FROM sandbox_events s WHERE s.sandbox_id = @id AND s.type = 'STARTED')::boolean AS started,
       coalesce(l.type, '')::text AS last_type,
       coalesce(l.sandbox->>'state', '')::text AS last_state
FROM (SELECT 1) AS one
LEFT JOIN LATERAL (
    SELECT e.type, e.sandbox FROM sandbox_events e WHERE e.sandbox_id = @id ORDER BY e.seq DESC LIMIT 1
) AS l ON true;

-- ListSandboxEvents pages oldest first through a sandbox's events.
-- name: ListSandboxEvents :many
SELECT * FROM sandbox_events
WHERE sandbox_id = @sandbox_id AND seq > @after_seq
ORDER BY seq
LIMIT @lim;

-- name: CountSandboxEvents :one
SELECT count(*) FROM sandbox_events WHERE sandbox_id = $1;

-- SandboxEventsSince reads the events a resync replays: those recorded
-- since a time, of a tenant (NULL: all), of some sandboxes (none: all).
-- name: SandboxEventsSince :many
SELECT * FROM sandbox_events
WHERE (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant))
  AND (cardinality(@ids::uuid[]) = 0 OR sandbox_id = ANY(@ids::uuid[]))
  AND at >= @since
ORDER BY id
LIMIT 10000;

-- CurrentSandboxes reads what a subscription with includeCurrent shows
-- first: each live sandbox matching its filter, as it is now, with its
-- last event's number and type.
-- name: CurrentSandboxes :many
SELECT sqlc.embed(v), l.seq AS last_seq, l.type AS last_type
FROM sandbox_views v
JOIN LATERAL (
    SELECT e.seq, e.type FROM sandbox_events e WHERE e.sandbox_id = v.id ORDER BY e.seq DESC LIMIT 1
) AS l ON true
WHERE v.ended_as IS NULL
  AND (sqlc.narg(tenant)::uuid IS NULL OR v.tenant_id = sqlc.narg(tenant))
  AND (cardinality(@ids::uuid[]) = 0 OR v.id = ANY(@ids::uuid[]))
  AND (sqlc.narg(template)::uuid IS NULL OR v.template_id = sqlc.narg(template))
ORDER BY v.id
LIMIT 10000;
