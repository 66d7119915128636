-- A partial index for the reconciler's lapse pass, which looks each
-- interval for instances still recorded as on a certified host whose
-- certificate expired or was revoked: only those recorded as certified
-- are indexed.

-- +goose Up
CREATE INDEX instances_host_cert_valid_before ON instances (host_cert_valid_before) WHERE host_certified;

-- +goose Down
DROP INDEX instances_host_cert_valid_before;
