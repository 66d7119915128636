-- Sandboxes: short-lived instances made from a template, which expire by
-- themselves. An instance stays the unit a host runs: a sandbox's instance
-- points at it (instances.sandbox_id), and a warm instance at the template
-- whose pool it belongs to (instances.warm_template_id). A warm instance
-- waits booted and paused, so paused is a desired state now.

-- +goose Up
-- A template says what each of its sandboxes runs. A tenant's template has
-- its tenant; an operator's public one has none, or names the tenant that
-- owns it (whose quota holds its warm instances) and is public.
CREATE TABLE sandbox_templates (
    id                  uuid PRIMARY KEY,
    tenant_id           uuid REFERENCES tenants (id),
    public              boolean NOT NULL DEFAULT false,
    name                text NOT NULL,
    pool_id             uuid NOT NULL REFERENCES pools (id),
    flavor_id           uuid NOT NULL REFERENCES flavors (id),
    image_id            uuid NOT NULL,
    ssh_keys            text[] NOT NULL,
    default_timeout_s   integer NOT NULL CHECK (default_timeout_s > 0),
    max_timeout_s       integer NOT NULL CHECK (max_timeout_s >= default_timeout_s),
    warm_count          integer NOT NULL DEFAULT 0 CHECK (warm_count >= 0),
    -- Increases with every change.
    version             bigint NOT NULL DEFAULT 1,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    deleted_at          timestamptz,
    CHECK (tenant_id IS NOT NULL OR public),
    -- Warm instances count against an owner's quota: no owner, no pool.
    CHECK (tenant_id IS NOT NULL OR warm_count = 0)
);
CREATE UNIQUE INDEX sandbox_templates_name_live ON sandbox_templates
    (coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'), name) WHERE deleted_at IS NULL;
CREATE INDEX sandbox_templates_tenant ON sandbox_templates (tenant_id, id DESC) WHERE deleted_at IS NULL;

-- A sandbox's state is its instance's (see sandbox_state), unless it ended:
-- ended_as says how (EXPIRED or DELETED).
CREATE TABLE sandboxes (
    id                  uuid PRIMARY KEY,
    tenant_id           uuid NOT NULL REFERENCES tenants (id),
    template_id         uuid NOT NULL REFERENCES sandbox_templates (id),
    -- The template's instance version its instance was made of.
    template_version    bigint NOT NULL,
    started_from        text NOT NULL CHECK (started_from IN ('WARM', 'COLD')),
    metadata            jsonb NOT NULL DEFAULT '{}',
    expires_at          timestamptz NOT NULL,
    ended_as            text CHECK (ended_as IN ('EXPIRED', 'DELETED')),
    ended_at            timestamptz,
    idempotency_key     text,
    version             bigint NOT NULL DEFAULT 1,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CHECK ((ended_as IS NULL) = (ended_at IS NULL))
);
CREATE UNIQUE INDEX sandboxes_idempotency ON sandboxes (tenant_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX sandboxes_tenant ON sandboxes (tenant_id, id DESC);
CREATE INDEX sandboxes_template_live ON sandboxes (template_id) WHERE ended_as IS NULL;
-- What the expiry of the vps.sandboxes reconciler reads.
CREATE INDEX sandboxes_expiry ON sandboxes (expires_at) WHERE ended_as IS NULL;

-- Deferred, so createSandbox claims a warm instance for a sandbox before it
-- inserts the sandbox, which says whether it started warm.
ALTER TABLE instances
    ADD COLUMN sandbox_id uuid REFERENCES sandboxes (id) DEFERRABLE INITIALLY DEFERRED,
    ADD COLUMN warm_template_id uuid REFERENCES sandbox_templates (id);
CREATE UNIQUE INDEX instances_sandbox ON instances (sandbox_id) WHERE sandbox_id IS NOT NULL;

ALTER TABLE instances DROP CONSTRAINT instances_desired_state_check;
ALTER TABLE instances ADD CONSTRAINT instances_desired_state_check
    CHECK (desired_state IN ('RUNNING', 'STOPPED', 'PAUSED', 'DELETED'));

-- sandbox_state derives a sandbox's state from how it ended, if it did, and
-- its instance's state and desired state: a claimed warm instance still
-- paused is resuming (STARTING), one pausing is RUNNING until it is PAUSED.
-- +goose StatementBegin
CREATE FUNCTION sandbox_state(ended_as text, state text, desired_state text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN ended_as IS NOT NULL THEN ended_as
        WHEN state IN ('RUNNING', 'REBOOTING') THEN 'RUNNING'
        WHEN state = 'PAUSED' AND desired_state = 'PAUSED' THEN 'PAUSED'
        WHEN state IN ('DELETING', 'DELETED') THEN 'DELETED'
        WHEN state IN ('ERROR', 'LOST') THEN state
        ELSE 'STARTING'
    END
$$;
-- +goose StatementEnd

-- A sandbox with its instance and the state they make. A migration adding
-- a column to sandboxes makes the view again to show it.
CREATE VIEW sandbox_views AS
SELECT s.*, i.id AS instance_id, sandbox_state(s.ended_as, i.state, i.desired_state)::text AS state
FROM sandboxes s JOIN instances i ON i.sandbox_id = s.id;

-- +goose Down
DROP VIEW sandbox_views;
DROP FUNCTION sandbox_state(text, text, text);
-- A paused instance is asked to run again, as no desired state is paused.
UPDATE instances SET desired_state = 'RUNNING' WHERE desired_state = 'PAUSED';
ALTER TABLE instances DROP CONSTRAINT instances_desired_state_check;
ALTER TABLE instances ADD CONSTRAINT instances_desired_state_check
    CHECK (desired_state IN ('RUNNING', 'STOPPED', 'DELETED'));
ALTER TABLE instances DROP COLUMN warm_template_id, DROP COLUMN sandbox_id;
DROP TABLE sandboxes, sandbox_templates;
