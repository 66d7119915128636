-- InstancesByStateAndPool counts the instances not DELETED, for the
-- reconciler's metrics.
-- name: InstancesByStateAndPool :many
SELECT pool_id, state, count(*)::bigint AS n FROM instances WHERE state <> 'DELETED' GROUP BY pool_id, state;

-- HostReports reads when each host last reported, and the database's
-- clock to measure it by, for the reconciler's metrics.
-- name: HostReports :many
SELECT id, name, pool_id, last_seen_at, now()::timestamptz AS now FROM hosts ORDER BY name;
