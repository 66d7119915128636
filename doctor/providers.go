package doctor

import (
	"context"
	"fmt"
	"time"

	"github.com/better-compute/vps/ids"
)

// checkOrphans finds servers at providers carrying our label that no live
// instance owns, not yet swept (vps.providers.orphans): they cost money
// until the sweep deletes them after its grace period.
func checkOrphans(ctx context.Context, d *Doctor) ([]Finding, error) {
	rows, err := d.q.DoctorProviderOrphans(ctx)
	if err != nil {
		return nil, fmt.Errorf("list provider orphans: %w", err)
	}
	var out []Finding
	for _, r := range rows {
		out = append(out, Finding{
			Code: "vps.providers.orphans", Level: LevelWarning, Objects: []string{ids.Encode(ids.ProviderAccount, r.AccountID)},
			Message: fmt.Sprintf("server %s of provider account %s (label %s) has been an orphan since %s", r.ServerID, ids.Encode(ids.ProviderAccount, r.AccountID), r.InstanceLabel, r.FirstSeenAt.UTC().Format(time.RFC3339)),
			Remedy:  "a reconcile process deletes it once its orphan grace (--orphan-grace) passes; if it stays, check the account's credentials and the reconcile log",
		})
	}
	return out, nil
}
