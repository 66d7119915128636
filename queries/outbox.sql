-- name: InsertOutbox :exec
INSERT INTO outbox (topic, key, channel, payload) VALUES ($1, $2, $3, $4);

-- ClaimOutbox takes the oldest rows for one relay; other relays skip them.
-- name: ClaimOutbox :many
SELECT * FROM outbox ORDER BY id LIMIT @lim FOR UPDATE SKIP LOCKED;

-- name: DeleteOutbox :exec
DELETE FROM outbox WHERE id = ANY(@ids::bigint[]);
