package reconciler

import (
	"context"
	"fmt"
	"time"

	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// finishDeletedTenantAccount deletes the provider account of a deleted
// tenant after a sweep of it that began (was claimed) at claimed and found
// no server of ours: not before, as deleting a server needs the account.
// The instances of its pools must all have been DELETED before the sweep
// began, so its listing showed any server they left, and every orphan it
// noted must be deleted (a later sweep forgets it).
func (r *Reconciler) finishDeletedTenantAccount(ctx context.Context, a *account, claimed time.Time) error {
	n, err := sqlc.New(r.db).DeleteSweptTenantAccount(ctx, sqlc.DeleteSweptTenantAccountParams{AccountID: a.id, ListedAt: claimed})
	if err != nil {
		return fmt.Errorf("delete provider account %s of a deleted tenant: %w", a.id, err)
	}
	if n > 0 {
		r.log.InfoContext(ctx, "deleted the provider account of a deleted tenant", "account", ids.Encode(ids.ProviderAccount, a.id))
	}
	return nil
}
