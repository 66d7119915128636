-- InsertHostCommand queues a command for a host. The caller bumps the
-- host's spec generation in the same transaction and wakes the host after
-- it commits.
-- name: InsertHostCommand :one
INSERT INTO host_commands (id, host_id, kind, lane, payload, deadline)
VALUES (@id, @host_id, @kind, @lane, @payload, @deadline)
RETURNING *;

-- name: HostCommand :one
SELECT * FROM host_commands WHERE id = $1;
