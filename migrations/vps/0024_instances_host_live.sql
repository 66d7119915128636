-- The instances placed on a host, as every host report reads them
-- (HostInstances, ObserveAbsent: placed, neither PENDING nor DELETED).
-- instances_host holds only those with a spec entry, which those queries
-- do not say, so each report scanned every instance of the fleet: at
-- 10,000 instances on 100 hosts, 6 ms a report.

-- +goose Up
CREATE INDEX instances_host_live ON instances (host_id) WHERE state NOT IN ('PENDING', 'DELETED');

-- +goose Down
DROP INDEX instances_host_live;
