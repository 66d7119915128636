package hostd

import (
	"context"
	"errors"
	"time"

	"github.com/better-compute/vps/hostproto"
)

// minPollGap is the least time between the starts of two spec long-polls
// when the last brought nothing new, so that even a gateway that answers at
// once is not asked in a hot loop. A poll that brought a newer spec is
// followed at once: the spec is changing, and the host should keep up.
const minPollGap = 100 * time.Millisecond

// pollSpecs long-polls the gateway for NodeSpecs newer than the last one it
// got, and hands each to specs, replacing one the main loop has not taken:
// only the newest spec matters. A 204 is simply asked again; errors are
// retried with backoff. It returns when ctx ends.
//
// From version 5 it asks for a delta to the spec it holds, and makes it
// whole from that spec before handing it on (wholeSpec); a delta it cannot
// make whole is logged and the whole spec asked for (after=0).
func (d *Daemon) pollSpecs(ctx context.Context, specs chan hostproto.NodeSpec) {
	var (
		held     *hostproto.NodeSpec // the last spec received, whole
		askWhole bool                // the last delta could not be made whole
		retry    backoff
		last     time.Time
		progress bool // the last poll brought a newer spec
	)
	for {
		if !progress && !sleep(ctx, time.Until(last.Add(minPollGap))) {
			return
		}
		last, progress = time.Now(), false
		var after int64 // the generation of the last spec received
		if held != nil {
			after = held.Generation
		}
		ask := after
		if askWhole {
			ask = 0
		}
		spec, ok, err := d.gw.spec(ctx, ask)
		if err == nil && ok {
			if spec, err = wholeSpec(spec, held); err != nil {
				d.log.Warn("asking for the whole spec", "err", err)
				askWhole, progress = true, true
				continue
			}
			askWhole = false
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			wait := retry.next()
			d.logGatewayError("spec long-poll failed", err, wait)
			if !sleep(ctx, wait) {
				return
			}
			continue
		}
		retry.reset()
		if !ok || spec.Generation <= after {
			continue
		}
		progress = true
		d.log.Info("new spec", "generation", spec.Generation, "instances", len(spec.Instances))
		held = &spec
		select {
		case <-specs:
		default:
		}
		specs <- spec
	}
}

// logGatewayError logs a failed gateway request that is retried after
// wait; a refused credential is an error an operator must fix.
func (d *Daemon) logGatewayError(msg string, err error, wait time.Duration) {
	if errors.Is(err, errUnauthorized) {
		d.log.Error(msg+": check the host credential or certificate", "err", err, "retry_in", wait)
		return
	}
	d.log.Warn(msg, "err", err, "retry_in", wait)
}
