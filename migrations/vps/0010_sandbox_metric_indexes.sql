-- Partial indexes for the sandbox metrics and the warm pools: the free
-- warm instances of a template's version (what createSandbox claims and
-- the pool's fill counts), the claimed ones (claims over time), and the
-- live sandboxes of a template by state.

-- +goose Up
CREATE INDEX instances_warm_free ON instances (warm_template_id, warm_template_version, id)
    WHERE warm_template_id IS NOT NULL AND claimed_at IS NULL;
CREATE INDEX instances_warm_claimed ON instances (warm_template_id, claimed_at)
    WHERE claimed_at IS NOT NULL;
CREATE INDEX sandboxes_template_created ON sandboxes (template_id, created_at);

-- +goose Down
DROP INDEX sandboxes_template_created, instances_warm_claimed, instances_warm_free;
