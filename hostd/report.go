package hostd

import (
	"context"

	"github.com/better-compute/vps/hostproto"
)

// postReports posts the reports the main loop hands it. When a post fails
// it retries with backoff, and with the newest report: one that arrived
// meanwhile replaces the one that failed. It returns when ctx ends.
func (d *Daemon) postReports(ctx context.Context, reports chan hostproto.Report) {
	var retry backoff
	for {
		var r hostproto.Report
		select {
		case <-ctx.Done():
			return
		case r = <-reports:
		}
		for {
			err := d.gw.report(ctx, r)
			if ctx.Err() == nil {
				d.metrics.reportDone(err)
			}
			if err == nil {
				d.xids.forget(r.Xids)
				retry.reset()
				break
			}
			if ctx.Err() != nil {
				return
			}
			wait := retry.next()
			d.logGatewayError("report failed", err, wait)
			if !sleep(ctx, wait) {
				return
			}
			select {
			case r = <-reports:
			default:
			}
		}
	}
}

// addStats gives each running or paused instance of statuses its Stats. A
// Runtime that cannot read them leaves the report without; the next one
// tries again.
func (d *Daemon) addStats(ctx context.Context, statuses []hostproto.InstanceStatus) {
	stats, err := d.cfg.Runtime.Stats(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("report without domain stats", "err", err)
		}
		return
	}
	for i, st := range statuses {
		if st.State != hostproto.StateRunning && st.State != hostproto.StatePaused {
			continue
		}
		if s, ok := stats[st.ID]; ok {
			statuses[i].Stats = &s
		}
	}
}
