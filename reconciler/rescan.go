package reconciler

import (
	"context"
	"fmt"

	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// rescan hands every instance not at rest, every instance on a silent
// host, and every provider bootstrap under way to the work stream. It is what makes Redis a hint: a Redis that
// lost its data only delays work until the next rescan.
func (r *Reconciler) rescan(ctx context.Context) error {
	if err := r.stream.ensureGroup(ctx); err != nil {
		return err
	}
	ids, err := sqlc.New(r.db).Unsettled(ctx, r.cfg.HostSilentAfter.Seconds())
	if err != nil {
		return fmt.Errorf("list unsettled instances: %w", err)
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = id.String()
	}
	if err := r.stream.add(ctx, vps.TopicInstances, keys...); err != nil {
		return err
	}
	open, err := sqlc.New(r.db).OpenProviderBootstraps(ctx)
	if err != nil {
		return fmt.Errorf("list open provider bootstraps: %w", err)
	}
	keys = keys[:0]
	for _, id := range open {
		keys = append(keys, id.String())
	}
	return r.stream.add(ctx, vps.TopicBootstraps, keys...)
}
