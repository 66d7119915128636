-- SetHostCertification records how a host proved itself in a report on
-- the instances its spec holds: certified until valid_before, or
-- (certified false, valid_before NULL) not. Only the rows that differ are
-- written, and returned for their events. (Placement records it first, in
-- Transition; the lapse pass ends it with LapseCertification.)
-- name: SetHostCertification :many
UPDATE instances SET host_certified = @certified::boolean, host_cert_valid_before = sqlc.narg(valid_before)::timestamptz,
    version = version + 1, updated_at = clock_timestamp()
WHERE host_id = @host::uuid AND spec_power IS NOT NULL AND state <> 'DELETED'
  AND (host_certified, host_cert_valid_before) IS DISTINCT FROM (@certified::boolean, sqlc.narg(valid_before)::timestamptz)
RETURNING *;

-- LapsedCertifications lists live instances still recorded as on a
-- certified host whose certificate no longer stands: it expired, or its
-- host has no live certificate that lasts as long (they were revoked),
-- oldest validity first, with the version each was read at.
-- name: LapsedCertifications :many
SELECT i.id, i.version, i.host_cert_valid_before::timestamptz AS valid_before,
       (i.host_cert_valid_before >= now())::boolean AS revoked
FROM instances i
LEFT JOIN hosts h ON h.id = i.host_id
WHERE i.host_certified AND i.state <> 'DELETED'
  AND (i.host_cert_valid_before < now() OR h.cert_not_after IS NULL OR h.cert_not_after < i.host_cert_valid_before)
ORDER BY i.host_cert_valid_before, i.id
LIMIT @max;

-- LapseCertification records that an instance's host is no longer
-- certified, if the instance is still at the version it was listed at.
-- name: LapseCertification :one
UPDATE instances SET host_certified = false, host_cert_valid_before = NULL, version = version + 1, updated_at = clock_timestamp()
WHERE id = @id AND version = @version AND host_certified
RETURNING *;
