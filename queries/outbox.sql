-- name: InsertOutbox :exec
INSERT INTO outbox (topic, key, channel, payload) VALUES ($1, $2, $3, $4);

-- WakeKeys writes a work row on topic for each key, in one statement.
-- name: WakeKeys :exec
INSERT INTO outbox (topic, key) SELECT @topic::text, unnest(@keys::uuid[]);

-- ClaimOutbox deletes the oldest rows written at least @age_seconds ago
-- for one relay and returns them; the relay commits the delete only after
-- Redis took them. Another relay waits for them rather than skipping
-- them: were it to publish the rows after them first, an instance's later
-- event would come before its earlier one.
-- name: ClaimOutbox :many
DELETE FROM outbox WHERE id IN (
    SELECT id FROM outbox
    WHERE created_at <= clock_timestamp() - make_interval(secs => @age_seconds::float8)
    ORDER BY id LIMIT @lim FOR UPDATE)
RETURNING *;

-- GetOutbox reads one row, for a relay whose notification of it carried
-- only its id.
-- name: GetOutbox :one
SELECT * FROM outbox WHERE id = $1;

-- DeleteOutbox deletes rows a relay published from their notifications.
-- name: DeleteOutbox :exec
DELETE FROM outbox WHERE id = ANY(@ids::bigint[]);

-- InsertOutboxes writes instance events, several in one statement, in the
-- order given: the arrays are unnested side by side, in order, so the rows'
-- ids ascend as given, which is the order the relay publishes them in.
-- name: InsertOutboxes :exec
INSERT INTO outbox (topic, key, channel, payload)
SELECT unnest(@topics::text[]), unnest(@keys::uuid[]), unnest(@channels::text[]), unnest(@payloads::jsonb[]);
