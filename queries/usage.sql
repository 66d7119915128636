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
