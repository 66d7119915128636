-- InsertSandboxStats records one sample of each sandbox instance given
-- (samples: a JSON array of {instance_id, at, cpu_time_ns, memory_bytes})
-- (instances of no sandbox are left out), with its CPU use since the
-- sandbox's sample before: cpu_fraction is NULL for a first sample, or
-- when the CPU time went back (the domain restarted).
-- name: InsertSandboxStats :execrows
INSERT INTO sandbox_stats (sandbox_id, at, cpu_time_ns, cpu_fraction, memory_bytes)
SELECT i.sandbox_id, u.at, u.cpu_time_ns,
       CASE WHEN p.at IS NOT NULL AND u.at > p.at AND u.cpu_time_ns >= p.cpu_time_ns
            THEN least(1.0, (u.cpu_time_ns - p.cpu_time_ns)::double precision
                 / (extract(epoch FROM u.at - p.at) * 1e9 * greatest(i.vcpus, 1)))
       END,
       u.memory_bytes
FROM jsonb_to_recordset(@samples::jsonb) AS u (instance_id uuid, at timestamptz, cpu_time_ns bigint, memory_bytes bigint)
JOIN instances i ON i.id = u.instance_id AND i.sandbox_id IS NOT NULL
LEFT JOIN LATERAL (
    SELECT s.at, s.cpu_time_ns FROM sandbox_stats s WHERE s.sandbox_id = i.sandbox_id ORDER BY s.at DESC LIMIT 1
) AS p ON true
ON CONFLICT (sandbox_id, at) DO NOTHING;

-- ListSandboxStats reads a sandbox's latest samples since a time, newest
-- first.
-- name: ListSandboxStats :many
SELECT at, cpu_fraction, memory_bytes FROM sandbox_stats
WHERE sandbox_id = @sandbox_id AND at >= @since
ORDER BY at DESC
LIMIT @lim;

-- PruneSandboxStats deletes the samples of sandboxes that ended before a
-- time: a sandbox's are kept for its life and a while after.
-- name: PruneSandboxStats :execrows
DELETE FROM sandbox_stats st USING sandboxes s
WHERE st.sandbox_id = s.id AND s.ended_at < @ended_before;
