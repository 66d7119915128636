-- ClaimPeriodic claims a periodic job's run for this interval: one row,
-- and no other, when the job last ran an interval ago or more (or never).
-- name: ClaimPeriodic :execrows
INSERT INTO periodic_runs (name, ran_at) VALUES (@name, now())
ON CONFLICT (name) DO UPDATE SET ran_at = now()
WHERE periodic_runs.ran_at <= now() - make_interval(secs => @interval_seconds::float8);
