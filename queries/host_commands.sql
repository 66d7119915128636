-- InsertHostCommand queues a command for a host. The caller bumps the
-- host's spec generation in the same transaction and wakes the host after
-- it commits.
-- name: InsertHostCommand :one
INSERT INTO host_commands (id, host_id, kind, lane, payload, deadline)
VALUES (@id, @host_id, @kind, @lane, @payload, @deadline)
RETURNING *;

-- name: HostCommand :one
SELECT * FROM host_commands WHERE id = $1;

-- LockCommandHost locks a host's row as bumping its generation would, and
-- reads the protocol it speaks, before a command is queued for it: a host
-- that changes its version meanwhile waits for the command's transaction.
-- name: LockCommandHost :one
SELECT name, protocol FROM hosts WHERE id = $1 FOR NO KEY UPDATE;

-- SpecCommands lists a host's open commands, oldest first, for its spec.
-- name: SpecCommands :many
SELECT * FROM host_commands WHERE host_id = $1 AND acknowledged_at IS NULL ORDER BY created_at, id;

-- LockReportedCommands locks the host's commands a report speaks of, in
-- one order, so two reports of one host crossing on the wire do not
-- deadlock. Another host's command is not found.
-- name: LockReportedCommands :many
SELECT * FROM host_commands WHERE host_id = @host_id AND id = ANY(@ids::uuid[]) ORDER BY id FOR UPDATE;

-- StartCommand records that the host runs a command, with its progress.
-- name: StartCommand :exec
UPDATE host_commands SET state = 'RUNNING', started_at = coalesce(started_at, now()), progress = greatest(progress, @progress)
WHERE id = @id AND state IN ('QUEUED', 'RUNNING');

-- FinishCommand records a command's end as the host reported it and
-- acknowledges it: it leaves the host's spec.
-- name: FinishCommand :exec
UPDATE host_commands SET state = @state, result = sqlc.narg(result)::jsonb, error = @error, progress = CASE WHEN @state = 'SUCCEEDED' THEN 100 ELSE progress END,
    started_at = coalesce(started_at, now()), finished_at = now(), acknowledged_at = now()
WHERE id = @id AND state IN ('QUEUED', 'RUNNING');

-- AcknowledgeCommand takes a command the host has ended out of its spec.
-- name: AcknowledgeCommand :exec
UPDATE host_commands SET acknowledged_at = now() WHERE id = $1 AND acknowledged_at IS NULL;

-- OverdueCommands lists unfinished commands past their deadline.
-- name: OverdueCommands :many
SELECT id FROM host_commands WHERE state IN ('QUEUED', 'RUNNING') AND deadline < now() ORDER BY deadline LIMIT $1;

-- FailOverdueCommand fails a command past its deadline, if it still is
-- unfinished, and marks it abandoned: the host's spec tells it to stop.
-- name: FailOverdueCommand :one
UPDATE host_commands SET state = 'FAILED', error = 'deadline passed', abandoned_at = now(), finished_at = now()
WHERE id = $1 AND state IN ('QUEUED', 'RUNNING') AND deadline < now()
RETURNING host_id;

-- CommandOutcomes counts the ended commands by kind and outcome
-- (succeeded, failed, or deadline: failed by the control plane), for
-- /metrics.
-- name: CommandOutcomes :many
SELECT kind, (CASE WHEN abandoned_at IS NOT NULL THEN 'deadline' ELSE lower(state) END)::text AS outcome, count(*) AS n
FROM host_commands WHERE state IN ('SUCCEEDED', 'FAILED') GROUP BY 1, 2;

-- OldestUnfinishedCommands gives, by lane, when the oldest command not yet
-- ended (queued or running) was queued, for /metrics.
-- name: OldestUnfinishedCommands :many
SELECT lane, min(created_at)::timestamptz AS created_at FROM host_commands WHERE state IN ('QUEUED', 'RUNNING') GROUP BY lane;
