-- InsertHostStats writes one sample per host of a flush (control.StatsRecorder),
-- given as a JSON array; a host that is gone is skipped.
-- name: InsertHostStats :execrows
INSERT INTO host_stats (host_id, at, vcpus_used, memory_bytes, instances)
SELECT u.host_id, u.at, u.vcpus_used, u.memory_bytes, u.instances
FROM jsonb_to_recordset(@samples::jsonb) AS u (host_id uuid, at timestamptz, vcpus_used double precision, memory_bytes bigint, instances integer)
JOIN hosts h ON h.id = u.host_id
ON CONFLICT (host_id, at) DO NOTHING;

-- ListHostStats reads a host's latest samples since a time, newest first.
-- name: ListHostStats :many
SELECT at, vcpus_used, memory_bytes, instances FROM host_stats
WHERE host_id = @host_id AND at >= @since
ORDER BY at DESC
LIMIT @lim;

-- PruneHostStats deletes the samples taken before a time.
-- name: PruneHostStats :execrows
DELETE FROM host_stats WHERE at < @before;

-- InstancesOnHost lists the instances a host holds (not DELETED), by name.
-- name: InstancesOnHost :many
SELECT * FROM instances WHERE host_id = @host_id AND state <> 'DELETED' ORDER BY name, id LIMIT 1000;
