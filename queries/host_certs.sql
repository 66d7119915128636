-- name: LockHostCAs :exec
-- Serializes making the first CA and rotations across serve processes.
SELECT pg_advisory_xact_lock(hashtext('bc:host_cas'));

-- name: LiveHostCAs :many
-- The CAs not retired, oldest first: every one is trusted, the newest signs
-- host certificates.
SELECT * FROM host_cas WHERE retired_at IS NULL ORDER BY created_at, id;

-- name: InsertHostCA :one
INSERT INTO host_cas (id, cert_pem, key_sealed, not_after) VALUES ($1, $2, $3, $4) RETURNING *;

-- name: RetireHostCA :one
UPDATE host_cas SET retired_at = now() WHERE id = $1 AND retired_at IS NULL RETURNING *;

-- name: InsertHostCertificate :exec
INSERT INTO host_certificates (serial, host_id, ca_id, not_before, not_after) VALUES ($1, $2, $3, $4, $5);

-- HostByCertificate reads a host and, when that host was issued the
-- certificate of serial, when it was revoked: one round trip on every host
-- request that presents a certificate. issued is false for a serial not
-- issued to that host.
-- name: HostByCertificate :one
SELECT sqlc.embed(h), (c.serial IS NOT NULL)::boolean AS issued, c.revoked_at
FROM hosts h
LEFT JOIN host_certificates c ON c.serial = sqlc.arg(serial) AND c.host_id = h.id
WHERE h.id = sqlc.arg(host_id);

-- name: RevokeHostCertificates :execrows
UPDATE host_certificates SET revoked_at = now() WHERE host_id = $1 AND revoked_at IS NULL;

-- name: RefreshHostCertNotAfter :one
-- Sets when the host's newest live certificate expires (NULL: none).
UPDATE hosts SET cert_not_after = (
    SELECT max(c.not_after) FROM host_certificates c
    WHERE c.host_id = hosts.id AND c.revoked_at IS NULL AND c.not_after > now()
) WHERE id = $1 RETURNING *;

-- name: InsertHostJoinToken :exec
INSERT INTO host_join_tokens (token_hash, host_id, expires_at) VALUES ($1, $2, $3);

-- name: UseHostJoinToken :one
-- Spends a join token: once, and only before it expires.
UPDATE host_join_tokens SET used_at = now()
WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
RETURNING host_id;

-- name: GetHostForUpdate :one
SELECT * FROM hosts WHERE id = $1 FOR UPDATE;
