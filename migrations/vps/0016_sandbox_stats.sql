-- What a sandbox's instance uses of its host, as the host reports it every
-- few seconds: CPU (the share of one vCPU's time since the sample before,
-- as a fraction of the instance's vCPUs) and memory. Kept for the sandbox's
-- life and an hour after; a periodic prune deletes the rest. No foreign
-- key, as for sandbox_events: sandboxes are never deleted.

-- +goose Up
CREATE TABLE sandbox_stats (
    sandbox_id    uuid NOT NULL,
    at            timestamptz NOT NULL,
    -- Cumulative CPU time of the domain, as reported.
    cpu_time_ns   bigint NOT NULL,
    -- CPU use since the sample before, 0 to 1 of the instance's vCPUs; NULL
    -- for the first sample, or after the domain restarted.
    cpu_fraction  double precision,
    memory_bytes  bigint NOT NULL,
    PRIMARY KEY (sandbox_id, at)
);

-- +goose Down
DROP TABLE sandbox_stats;
