package reconciler

import (
	"context"
	"fmt"
	"time"

	"github.com/better-compute/vps/sqlc"
)

// periodic is work registered with Every.
type periodic struct {
	name     string
	interval time.Duration
	run      func(context.Context) error
}

// loop offers to run p every quarter interval and runs it when this
// process claims the interval: the claim is one row per name in Postgres,
// taken only when the last run began an interval ago or more.
func (r *Reconciler) loop(ctx context.Context, p periodic) error {
	t := time.NewTicker(max(p.interval/4, time.Millisecond))
	defer t.Stop()
	for {
		claimed, err := sqlc.New(r.db).ClaimPeriodic(ctx, sqlc.ClaimPeriodicParams{Name: p.name, IntervalSeconds: p.interval.Seconds()})
		if err != nil && ctx.Err() == nil {
			r.log.WarnContext(ctx, "claim periodic run", "job", p.name, "err", err)
		}
		if claimed > 0 {
			began := time.Now()
			err := p.run(ctx)
			if ctx.Err() != nil {
				return nil
			}
			r.metrics.ran(p.name, err, began)
			if err != nil {
				r.log.WarnContext(ctx, "periodic run failed", "job", p.name, "err", fmt.Errorf("%s: %w", p.name, err))
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
