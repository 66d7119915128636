package reconciler

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// rescanLock is the advisory lock under which one reconciler at a time
// rescans.
const rescanLock = 7_700_001

// rescan periodically hands every instance not at rest, and every instance
// on a silent host, to the work stream. It is what makes Redis a hint: a
// Redis that lost its data only delays work until the next rescan.
func (r *Reconciler) rescan(ctx context.Context) error {
	t := time.NewTicker(r.cfg.RescanInterval)
	defer t.Stop()
	for {
		if err := r.rescanOnce(ctx); err != nil && ctx.Err() == nil {
			r.log.WarnContext(ctx, "rescan", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (r *Reconciler) rescanOnce(ctx context.Context) error {
	return pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		var got bool
		if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", rescanLock).Scan(&got); err != nil {
			return fmt.Errorf("take rescan lock: %w", err)
		}
		if !got {
			return nil // another reconciler is rescanning
		}
		if err := r.stream.ensureGroup(ctx); err != nil {
			return err
		}
		ids, err := sqlc.New(tx).Unsettled(ctx, r.cfg.HostSilentAfter.Seconds())
		if err != nil {
			return fmt.Errorf("list unsettled instances: %w", err)
		}
		keys := make([]string, len(ids))
		for i, id := range ids {
			keys[i] = id.String()
		}
		return r.stream.add(ctx, vps.TopicInstances, keys...)
	})
}
