-- Sandbox snapshots: a running sandbox's disk, taken on its host without
-- stopping it (an instance.snapshot host command), from which new
-- sandboxes boot (instances.restore_from, sandboxes.from_snapshot). A
-- snapshot's files live on the host that took it (host_id). It is PENDING
-- until the host reports its command, then READY (with its size and
-- sha256) or FAILED (state_reason). Deleting one hides it at once
-- (deleted_at); its files go with a purge command.

-- +goose Up
CREATE TABLE sandbox_snapshots (
    id            uuid PRIMARY KEY,
    tenant_id     uuid NOT NULL REFERENCES tenants (id),
    sandbox_id    uuid NOT NULL REFERENCES sandboxes (id),
    -- The template of the sandbox it was taken from: a restore runs the
    -- template's flavor in its pool.
    template_id   uuid NOT NULL REFERENCES sandbox_templates (id),
    name          text NOT NULL,
    state         text NOT NULL DEFAULT 'PENDING' CHECK (state IN ('PENDING', 'READY', 'FAILED')),
    state_reason  text NOT NULL DEFAULT '',
    host_id       uuid REFERENCES hosts (id),
    size_bytes    bigint CHECK (size_bytes >= 0),
    sha256        text,
    version       bigint NOT NULL DEFAULT 1,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    settled_at    timestamptz,
    deleted_at    timestamptz,
    CHECK ((state = 'READY') = (size_bytes IS NOT NULL AND sha256 IS NOT NULL))
);
CREATE UNIQUE INDEX sandbox_snapshots_name_live ON sandbox_snapshots (tenant_id, name) WHERE deleted_at IS NULL;
CREATE INDEX sandbox_snapshots_tenant ON sandbox_snapshots (tenant_id, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX sandbox_snapshots_pending ON sandbox_snapshots (created_at) WHERE state = 'PENDING';

ALTER TABLE instances ADD COLUMN restore_from uuid REFERENCES sandbox_snapshots (id);
ALTER TABLE sandboxes ADD COLUMN from_snapshot uuid REFERENCES sandbox_snapshots (id);

-- +goose Down
ALTER TABLE sandboxes DROP COLUMN from_snapshot;
ALTER TABLE instances DROP COLUMN restore_from;
DROP TABLE sandbox_snapshots;
