-- When each periodic job of the reconcilers last ran: whichever process
-- claims a job's interval first runs it, so it runs once per interval
-- however many reconcilers there are.

-- +goose Up
CREATE TABLE periodic_runs (
    name    text PRIMARY KEY,
    ran_at  timestamptz NOT NULL
);

-- +goose Down
DROP TABLE periodic_runs;
