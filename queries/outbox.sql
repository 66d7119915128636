-- name: InsertOutbox :exec
INSERT INTO outbox (topic, key) VALUES ($1, $2);
