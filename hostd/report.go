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
			if err == nil {
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
