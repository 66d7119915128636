-- name: InsertOutbox :exec
INSERT INTO outbox (topic, key, channel, payload) VALUES ($1, $2, $3, $4);

-- ClaimOutbox deletes the oldest rows for one relay and returns them; the
-- relay commits the delete only after Redis took them. Another relay waits
-- for them rather than skipping them: were it to publish the rows after
-- them first, an instance's later event would come before its earlier one.
-- name: ClaimOutbox :many
DELETE FROM outbox WHERE id IN (SELECT id FROM outbox ORDER BY id LIMIT @lim FOR UPDATE)
RETURNING *;
