-- SetHostCertification records how a host proved itself in a report on
-- the instances its spec holds: certified until valid_before, or
-- (certified false, valid_before NULL) not. Only the rows that differ are
-- written, and returned for their events. (Placement records it first, in
-- Transition; the lapse pass ends it with LapseCertification.)
-- name: SetHostCertification :many
UPDATE instances SET host_certified = @certified::boolean, host_cert_valid_before = sqlc.narg(valid_before)::timestamptz,
    version = version + 1, updated_at = now()
WHERE host_id = @host::uuid AND spec_power IS NOT NULL AND state <> 'DELETED'
  AND (host_certified, host_cert_valid_before) IS DISTINCT FROM (@certified::boolean, sqlc.narg(valid_before)::timestamptz)
RETURNING *;

-- LapsedCertifications lists live instances still recorded as on a
-- certified host whose certificate has expired, oldest lapse first.
-- name: LapsedCertifications :many
SELECT id FROM instances
WHERE host_certified AND host_cert_valid_before < now() AND state <> 'DELETED'
ORDER BY host_cert_valid_before, id
LIMIT @max;

-- LapseCertification records that an instance's host is no longer
-- certified, if its certificate still has lapsed.
-- name: LapseCertification :one
UPDATE instances SET host_certified = false, host_cert_valid_before = NULL, version = version + 1, updated_at = now()
WHERE id = @id AND host_certified AND host_cert_valid_before < now() AND state <> 'DELETED'
RETURNING *;
