-- What each host actually used, over time: one row per host per stats
-- interval, the sum over the instances its report carried (the sandbox
-- stats' reports, control.StatsRecorder). Kept a day.

-- +goose Up
CREATE TABLE host_stats (
    host_id       uuid NOT NULL REFERENCES hosts (id),
    at            timestamptz NOT NULL,
    -- vCPUs its instances used since the sample before, summed; NULL when
    -- no instance had a sample before (a first report, a restarted serve).
    vcpus_used    double precision,
    memory_bytes  bigint NOT NULL,
    instances     integer NOT NULL,
    PRIMARY KEY (host_id, at)
);
CREATE INDEX host_stats_at ON host_stats (at);

-- +goose Down
DROP TABLE host_stats;
