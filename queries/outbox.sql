-- name: InsertOutbox :exec
INSERT INTO outbox (topic, key, channel, payload) VALUES ($1, $2, $3, $4);

-- ClaimOutbox takes the oldest rows for one relay. Another relay waits for
-- them rather than skipping them: were it to publish the rows after them
-- first, an instance's later event would come before its earlier one.
-- name: ClaimOutbox :many
SELECT * FROM outbox ORDER BY id LIMIT @lim FOR UPDATE;

-- name: DeleteOutbox :exec
DELETE FROM outbox WHERE id = ANY(@ids::bigint[]);
