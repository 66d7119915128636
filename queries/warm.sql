-- InsertTemplateInstance inserts an instance made from a sandbox template:
-- a sandbox's (sandbox_id) or a warm one (warm_template_id and version);
-- a restored sandbox's boots from a snapshot (restore_from).
-- name: InsertTemplateInstance :one
INSERT INTO instances (
    id, tenant_id, pool_id, flavor_id, image_id, image_url, image_sha256, image_format,
    image_verified, name, ssh_keys, vcpus, memory_mb, disk_gb, gpu_model, gpu_count,
    desired_state, state, sandbox_id, warm_template_id, warm_template_version, network_policy, env_sealed, restore_from,
    updated_at
) VALUES (
    @id, @tenant_id, @pool_id, @flavor_id, @image_id, @image_url, @image_sha256, @image_format,
    @image_verified, @name, @ssh_keys, @vcpus, @memory_mb, @disk_gb, @gpu_model, @gpu_count,
    @desired_state, 'PENDING', sqlc.narg(sandbox_id), sqlc.narg(warm_template_id), sqlc.narg(warm_template_version),
    @network_policy, @env_sealed, sqlc.narg(restore_from), clock_timestamp()
) RETURNING *;

-- ClaimWarmInstance gives a sandbox one free warm instance of a template's
-- version, ready ones (PAUSED) first, and asks it to run: the instance
-- moves to the sandbox's tenant. A free instance another transaction holds
-- is skipped, not waited for, and the update is conditional on it being
-- still free, so no warm instance is claimed twice.
-- name: ClaimWarmInstance :one
UPDATE instances SET
    claimed_at = now(), sandbox_id = @sandbox_id::uuid, tenant_id = @tenant_id,
    desired_state = 'RUNNING', version = version + 1, updated_at = clock_timestamp()
WHERE id = (
    SELECT w.id FROM instances w
    WHERE w.warm_template_id = @template_id::uuid AND w.warm_template_version = @template_version::bigint
      AND w.claimed_at IS NULL AND w.desired_state = 'PAUSED'
      AND w.state IN ('PENDING', 'PROVISIONING', 'STARTING', 'RUNNING', 'PAUSED')
    ORDER BY (w.state = 'PAUSED') DESC, w.id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
) AND claimed_at IS NULL
RETURNING *;

-- ClaimWarmInstanceBehindStep is the claim when ClaimWarmInstance found
-- every free instance locked: it takes one that no other claim holds, ready
-- ones first (a claim's FOR UPDATE conflicts with FOR KEY SHARE, a step's or
-- a report's FOR NO KEY UPDATE does not) and waits for that step, which
-- lasts milliseconds, instead of booting a cold instance for seconds. It
-- never waits behind another claim, but for one that took the same row by
-- this same pass at the same moment.
-- name: ClaimWarmInstanceBehindStep :one
UPDATE instances SET
    claimed_at = now(), sandbox_id = @sandbox_id::uuid, tenant_id = @tenant_id,
    desired_state = 'RUNNING', version = version + 1, updated_at = clock_timestamp()
WHERE id = (
    SELECT w.id FROM instances w
    WHERE w.warm_template_id = @template_id::uuid AND w.warm_template_version = @template_version::bigint
      AND w.claimed_at IS NULL AND w.desired_state = 'PAUSED'
      AND w.state IN ('PENDING', 'PROVISIONING', 'STARTING', 'RUNNING', 'PAUSED')
    ORDER BY (w.state = 'PAUSED') DESC, w.id
    LIMIT 1
    FOR KEY SHARE SKIP LOCKED
) AND claimed_at IS NULL AND desired_state = 'PAUSED'
  AND state IN ('PENDING', 'PROVISIONING', 'STARTING', 'RUNNING', 'PAUSED')
RETURNING *;

-- DeleteFreeWarmInstances asks for a template's free warm instances to be
-- deleted: when the template is, or (the reconciler) when the pool shrinks.
-- name: DeleteFreeWarmInstances :many
UPDATE instances SET desired_state = 'DELETED', version = version + 1, updated_at = clock_timestamp()
WHERE warm_template_id = @template_id::uuid AND claimed_at IS NULL AND desired_state <> 'DELETED'
RETURNING *;
