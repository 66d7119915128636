package reconciler

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/sqlc"
)

// meterUsage is the vps.usage job, run once per UsageInterval across all
// reconcilers: it meters every closed interval not metered yet, oldest
// first, each in its own transaction, from the instances' state history
// alone. An interval is closed UsageSettle after it ends, so a change
// recorded in it has committed. After the job was down, the intervals it
// missed are metered on its next run as they would have been then.
func (r *Reconciler) meterUsage(ctx context.Context) error {
	interval := r.cfg.UsageInterval
	if err := sqlc.New(r.db).InitUsageMeter(ctx, interval.Seconds()); err != nil {
		return fmt.Errorf("start the usage meter: %w", err)
	}
	intervals, rows := 0, int64(0)
	for {
		n, more, err := r.meterNext(ctx, interval)
		if err != nil || !more {
			if intervals > 0 {
				r.log.InfoContext(ctx, "usage metered", "intervals", intervals, "rows", rows)
			}
			return err
		}
		intervals, rows = intervals+1, rows+n
	}
}

// meterNext meters the next closed interval, if there is one, and says
// how many rows it wrote and whether it did. The meter's row lock makes
// one reconciler meter it; the usage rows' key makes a repeated one write
// nothing.
func (r *Reconciler) meterNext(ctx context.Context, interval time.Duration) (rows int64, metered bool, err error) {
	err = pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		m, err := q.LockUsageMeter(ctx)
		if err != nil {
			return fmt.Errorf("lock the usage meter: %w", err)
		}
		starts := m.MeteredUntil
		ends := starts.Add(interval)
		if ends.After(m.Now.Add(-r.cfg.UsageSettle)) {
			return nil
		}
		if rows, err = q.MeterInterval(ctx, sqlc.MeterIntervalParams{Starts: starts, Ends: ends}); err != nil {
			return fmt.Errorf("meter usage from %s: %w", starts.Format(time.RFC3339), err)
		}
		if err := q.AdvanceUsageMeter(ctx, ends); err != nil {
			return fmt.Errorf("advance the usage meter: %w", err)
		}
		metered = true
		return nil
	})
	return rows, metered, err
}
