-- InitUsageMeter starts metering at the interval boundary at or before
-- the first recorded state change (or now), once.
-- name: InitUsageMeter :exec
INSERT INTO usage_meter (metered_until)
SELECT to_timestamp(floor(extract(epoch FROM coalesce(min(at), clock_timestamp())) / @interval_seconds::float8) * @interval_seconds::float8)
FROM instance_state_history
ON CONFLICT DO NOTHING;

-- LockUsageMeter locks the meter for one interval's metering and reads
-- how far it is and the database's clock (the one history is written by).
-- name: LockUsageMeter :one
SELECT metered_until, clock_timestamp()::timestamptz AS now FROM usage_meter FOR UPDATE;

-- name: AdvanceUsageMeter :exec
UPDATE usage_meter SET metered_until = @metered_until;

-- MeterInterval writes one usage row per instance that was not DELETED for
-- some of [starts, ends), from the state history alone: the seconds in each
-- state class and what it held at its last change within the interval.
-- A row already written for the instance and interval stays as it is.
-- name: MeterInterval :execrows
WITH spans AS (
    SELECT h.*,
           extract(epoch FROM least(coalesce(h.ended_at, 'infinity'), @ends::timestamptz)
                            - greatest(h.at, @starts::timestamptz))::float8 AS secs
    FROM instance_state_history h
    WHERE h.to_state <> 'DELETED' AND h.at < @ends::timestamptz
      AND (h.ended_at IS NULL OR h.ended_at > @starts::timestamptz)
)
INSERT INTO usage_records (instance_id, interval_start, interval_end, tenant_id, sandbox_id, pool_id, flavor_id,
    running_seconds, paused_seconds, stopped_seconds, other_seconds, vcpus, memory_mb, disk_gb, gpu_count)
SELECT instance_id, @starts::timestamptz, @ends::timestamptz,
       (array_agg(tenant_id ORDER BY at DESC))[1], (array_agg(sandbox_id ORDER BY at DESC))[1],
       (array_agg(pool_id ORDER BY at DESC))[1], (array_agg(flavor_id ORDER BY at DESC))[1],
       coalesce(sum(secs) FILTER (WHERE to_state = 'RUNNING'), 0),
       coalesce(sum(secs) FILTER (WHERE to_state = 'PAUSED'), 0),
       coalesce(sum(secs) FILTER (WHERE to_state = 'STOPPED'), 0),
       coalesce(sum(secs) FILTER (WHERE to_state NOT IN ('RUNNING', 'PAUSED', 'STOPPED')), 0),
       (array_agg(vcpus ORDER BY at DESC))[1], (array_agg(memory_mb ORDER BY at DESC))[1],
       (array_agg(disk_gb ORDER BY at DESC))[1], (array_agg(gpu_count ORDER BY at DESC))[1]
FROM spans
GROUP BY instance_id
HAVING sum(secs) > 0
ON CONFLICT (instance_id, interval_start) DO NOTHING;

-- UsageTotals sums the usage rows of the intervals starting in [from, to),
-- grouped by the chosen keys (a key not chosen is the nil UUID or the epoch): seconds by state
-- class, and what was billed: vCPU-hours (RUNNING), memory GiB-hours and
-- GPU-hours (RUNNING and PAUSED), disk GiB-hours (RUNNING, PAUSED and
-- STOPPED). DAY is the UTC day an interval starts on.
-- name: UsageTotals :many
SELECT
    coalesce(CASE WHEN @by_tenant::boolean THEN tenant_id END, '00000000-0000-0000-0000-000000000000')::uuid AS tenant_id,
    coalesce(CASE WHEN @by_pool::boolean THEN pool_id END, '00000000-0000-0000-0000-000000000000')::uuid AS pool_id,
    coalesce(CASE WHEN @by_flavor::boolean THEN flavor_id END, '00000000-0000-0000-0000-000000000000')::uuid AS flavor_id,
    coalesce(CASE WHEN @by_instance::boolean THEN instance_id END, '00000000-0000-0000-0000-000000000000')::uuid AS instance_id,
    coalesce(CASE WHEN @by_day::boolean THEN date_trunc('day', interval_start, 'UTC') END, 'epoch')::timestamptz AS day,
    sum(running_seconds)::float8 AS running_seconds,
    sum(paused_seconds)::float8 AS paused_seconds,
    sum(stopped_seconds)::float8 AS stopped_seconds,
    sum(other_seconds)::float8 AS other_seconds,
    (sum(vcpus * running_seconds) / 3600)::float8 AS vcpu_hours,
    (sum(memory_mb / 1024.0 * (running_seconds + paused_seconds)) / 3600)::float8 AS memory_gib_hours,
    (sum(disk_gb * (running_seconds + paused_seconds + stopped_seconds)) / 3600)::float8 AS disk_gib_hours,
    (sum(gpu_count * (running_seconds + paused_seconds)) / 3600)::float8 AS gpu_hours
FROM usage_records
WHERE interval_start >= @from_time::timestamptz AND interval_start < @to_time::timestamptz
  AND (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant))
GROUP BY 1, 2, 3, 4, 5
ORDER BY 5, 1, 2, 3, 4
LIMIT @lim;
