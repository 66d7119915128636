-- An instance's live leases are read by every step that takes its row lock
-- (LockInstanceStep), by a host's spec (SpecLeases) and by a release, all
-- with released_at IS NULL. With only (instance_id) and the live-address
-- index, a planner whose statistics lag a table that grew fast (a fleet
-- created in a minute, before autovacuum analyzes it) combined the two and
-- scanned every live lease of every pool: 3.5 ms and 50 buffers a lock at
-- 10,000 instances. This index answers the predicate by itself: 0.1 ms.

-- +goose Up
CREATE INDEX ip_leases_instance_live ON ip_leases (instance_id) WHERE released_at IS NULL;

-- +goose Down
DROP INDEX ip_leases_instance_live;
