package control

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// registerTenantDeleted registers the tenant-deleted handlers of the
// modules of this package, in the order their locks are taken: sandboxes
// before their instances, templates before the warm instances a filler
// would add.
func (s *Service) registerTenantDeleted() {
	s.OnTenantDeleted("tokens", revokeTenantTokens)
	s.OnTenantDeleted("sandboxes", endTenantSandboxes)
	s.OnTenantDeleted("sandboxTemplates", deleteTenantTemplates)
	s.OnTenantDeleted("sandboxSnapshots", deleteTenantSnapshots)
	s.OnTenantDeleted("instances", deleteTenantInstances)
	s.OnTenantDeleted("images", deleteTenantImages)
	s.OnTenantDeleted("quota", deleteTenantQuota)
	s.OnTenantDeleted("providerAccounts", deleteUnusedTenantAccounts)
}

// deleteUnusedTenantAccounts deletes a deleted tenant's provider accounts
// that no pool uses. One a pool uses outlives the servers made with it:
// the sweep that finds none left deletes it (reconciler/tenants.go).
func deleteUnusedTenantAccounts(ctx context.Context, q *sqlc.Queries, tenant uuid.UUID) (int, error) {
	n, err := q.DeleteUnusedTenantAccounts(ctx, &tenant)
	if err != nil {
		return 0, fmt.Errorf("delete the tenant's unused provider accounts: %w", err)
	}
	return int(n), nil
}

// deleteTenantQuota removes a deleted tenant's limits.
func deleteTenantQuota(ctx context.Context, q *sqlc.Queries, tenant uuid.UUID) (int, error) {
	n, err := q.DeleteTenantQuota(ctx, tenant)
	if err != nil {
		return 0, fmt.Errorf("delete the tenant's quota: %w", err)
	}
	return int(n), nil
}

// endTenantSandboxes ends a deleted tenant's live sandboxes (DELETED,
// each with its event); their instances are deleteTenantInstances'. Each
// sandbox is locked before its instance, as its mutations lock them.
func endTenantSandboxes(ctx context.Context, q *sqlc.Queries, tenant uuid.UUID) (int, error) {
	live, err := q.LiveTenantSandboxes(ctx, tenant)
	if err != nil {
		return 0, fmt.Errorf("lock the tenant's sandboxes: %w", err)
	}
	for _, id := range live {
		if _, err := q.LockSandboxInstance(ctx, &id); err != nil {
			return 0, fmt.Errorf("lock the instance of sandbox %s: %w", id, err)
		}
		if _, err := q.EndSandbox(ctx, sqlc.EndSandboxParams{ID: id, EndedAs: domain.SandboxDeleted}); err != nil {
			return 0, fmt.Errorf("end sandbox %s: %w", id, err)
		}
		if err := events.RecordSandbox(ctx, q, id, events.Deleted, "tenant deleted"); err != nil {
			return 0, err
		}
	}
	return len(live), nil
}

// deleteTenantTemplates deletes a deleted tenant's sandbox templates, their
// warm counts to 0 so no pool of theirs is filled again.
func deleteTenantTemplates(ctx context.Context, q *sqlc.Queries, tenant uuid.UUID) (int, error) {
	deleted, err := q.SoftDeleteTenantTemplates(ctx, &tenant)
	if err != nil {
		return 0, fmt.Errorf("delete the tenant's sandbox templates: %w", err)
	}
	return len(deleted), nil
}

// deleteTenantSnapshots deletes a deleted tenant's sandbox snapshots and
// wakes the reconciler to purge their files.
func deleteTenantSnapshots(ctx context.Context, q *sqlc.Queries, tenant uuid.UUID) (int, error) {
	snapshots, err := q.DeleteTenantSnapshots(ctx, tenant)
	if err != nil {
		return 0, fmt.Errorf("delete the tenant's sandbox snapshots: %w", err)
	}
	for _, snap := range snapshots {
		if err := wakeSnapshot(ctx, q, snap); err != nil {
			return 0, err
		}
	}
	return len(snapshots), nil
}

// deleteTenantInstances asks for every instance of a deleted tenant (its
// sandboxes' and warm pools' too) to be deleted, and wakes the reconciler
// to release what each holds.
func deleteTenantInstances(ctx context.Context, q *sqlc.Queries, tenant uuid.UUID) (int, error) {
	deleted, err := q.DeleteTenantInstances(ctx, tenant)
	if err != nil {
		return 0, fmt.Errorf("delete tenant instances: %w", err)
	}
	for _, inst := range deleted {
		if err := events.Enqueue(ctx, q, vps.TopicInstances, events.Updated, inst); err != nil {
			return 0, err
		}
	}
	return len(deleted), nil
}

// revokeTenantTokens revokes the tokens of a deleted tenant's principals.
func revokeTenantTokens(ctx context.Context, q *sqlc.Queries, tenant uuid.UUID) (int, error) {
	n, err := q.RevokeTenantTokens(ctx, &tenant)
	if err != nil {
		return 0, fmt.Errorf("revoke tenant tokens: %w", err)
	}
	return int(n), nil
}

// deleteTenantImages deletes the images a deleted tenant registered.
func deleteTenantImages(ctx context.Context, q *sqlc.Queries, tenant uuid.UUID) (int, error) {
	n, err := q.SoftDeleteTenantImages(ctx, &tenant)
	if err != nil {
		return 0, fmt.Errorf("delete the tenant's images: %w", err)
	}
	return int(n), nil
}
