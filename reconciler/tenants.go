package reconciler

import (
	"context"
	"fmt"

	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// finishDeletedTenants converges what deleting a tenant leaves to the
// reconciler beyond its instances and snapshots, which their own kinds
// release: a deleted tenant's provider accounts are deleted once every
// server of theirs is gone (no instance of their pools left undeleted, no
// orphan left to sweep), and not before, as deleting a server needs its
// account.
func (r *Reconciler) finishDeletedTenants(ctx context.Context) error {
	gone, err := sqlc.New(r.db).DeleteGoneTenantAccounts(ctx)
	if err != nil {
		return fmt.Errorf("delete the provider accounts of deleted tenants: %w", err)
	}
	for _, id := range gone {
		r.log.InfoContext(ctx, "deleted the provider account of a deleted tenant", "account", ids.Encode(ids.ProviderAccount, id))
	}
	return nil
}
