-- GPU health: the Xid events hosts report, the marks they leave on their
-- devices, and the operator's clearing of a mark.

-- RecordXid notes an Xid of a host's GPU as its last one, unless a newer
-- one is already noted; it counts the device it touched.
-- name: RecordXid :execrows
UPDATE host_gpus SET last_xid = @code, last_xid_at = @at
WHERE host_id = @host_id AND address = @address AND (last_xid_at IS NULL OR last_xid_at <= @at);

-- MarkGPUUnhealthy marks a healthy GPU unhealthy, returning it; a device
-- already marked keeps its first mark (no row).
-- name: MarkGPUUnhealthy :one
UPDATE host_gpus SET unhealthy_since = @at, health_reason = @reason
WHERE host_id = @host_id AND address = @address AND unhealthy_since IS NULL
RETURNING *;

-- GPUHolder is the instance holding a device by a live claim.
-- name: GPUHolder :one
SELECT instance_id FROM device_claims WHERE host_id = $1 AND address = $2 AND released_at IS NULL;

-- UnhealthyClaim is the first unhealthy device an instance holds by a live
-- claim, with its host's name.
-- name: UnhealthyClaim :one
SELECT g.address, g.health_reason, h.name AS host_name
FROM device_claims d
JOIN host_gpus g ON g.host_id = d.host_id AND g.address = d.address
JOIN hosts h ON h.id = d.host_id
WHERE d.instance_id = $1 AND d.released_at IS NULL AND g.unhealthy_since IS NOT NULL
ORDER BY g.address
LIMIT 1;

-- ClearGPUHealth clears a device's unhealthy mark (its last Xid stays),
-- returning the device.
-- name: ClearGPUHealth :one
UPDATE host_gpus SET unhealthy_since = NULL, health_reason = NULL
WHERE host_id = $1 AND address = $2
RETURNING *;

-- GPUsOfModel counts the GPUs of a model on some hosts: all of them, the
-- unhealthy ones and the ones a live claim holds, for the reason an
-- instance waits.
-- name: GPUsOfModel :one
SELECT count(*)::int AS total,
       count(*) FILTER (WHERE g.unhealthy_since IS NOT NULL)::int AS unhealthy,
       count(*) FILTER (WHERE EXISTS (SELECT 1 FROM device_claims d WHERE d.host_id = g.host_id AND d.address = g.address AND d.released_at IS NULL))::int AS taken
FROM host_gpus g
WHERE g.host_id = ANY(@hosts::uuid[]) AND g.model = @model;
