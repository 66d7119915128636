-- Host certificates: a certificate authority kept by the control plane (its
-- key sealed), the certificates it issued to hosts, and the one-time join
-- tokens with which an adopted host asks for its first certificate.

-- +goose Up
-- The newest CA not retired signs; every CA not retired is trusted, so a
-- rotation overlaps until the hosts have renewed under the new one.
CREATE TABLE host_cas (
    id          uuid PRIMARY KEY,
    cert_pem    text NOT NULL,
    key_sealed  bytea NOT NULL,
    not_after   timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    retired_at  timestamptz
);

-- Every certificate issued to a host, by serial (hex). A revoked one is
-- refused at once, whatever its validity.
CREATE TABLE host_certificates (
    serial      text PRIMARY KEY,
    host_id     uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    ca_id       uuid NOT NULL REFERENCES host_cas (id),
    not_before  timestamptz NOT NULL,
    not_after   timestamptz NOT NULL,
    issued_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE INDEX host_certificates_host ON host_certificates (host_id);

-- cert_not_after: when the host's newest live certificate expires; NULL
-- while it has none. A host that joined by certificate alone has no bearer
-- credential.
ALTER TABLE hosts ADD COLUMN cert_not_after timestamptz;
ALTER TABLE hosts ALTER COLUMN credential_hash DROP NOT NULL;

-- A join token is stored as its SHA-256 hash, used once, and short-lived.
CREATE TABLE host_join_tokens (
    token_hash  bytea PRIMARY KEY,
    host_id     uuid NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX host_join_tokens_host ON host_join_tokens (host_id);

-- A pool that requires certified hosts places only on hosts whose
-- certificate outlives the placement margin.
ALTER TABLE pools ADD COLUMN require_certified_hosts boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE pools DROP COLUMN require_certified_hosts;
DROP TABLE host_join_tokens;
ALTER TABLE hosts DROP COLUMN cert_not_after;
DROP TABLE host_certificates, host_cas;
