package reconciler

import (
	"context"
	"time"
)

const (
	// ackAfter is how long the stream entries of committed reconciles are
	// gathered before they are acknowledged, in one XACK: one per
	// reconcile was a round trip to Redis per instance step. An entry not
	// yet acknowledged when its process dies is only delivered again, as
	// after a crash between a commit and its XACK.
	ackAfter = 50 * time.Millisecond
	// ackTimeout bounds one XACK.
	ackTimeout = 5 * time.Second
)

// ackCommitted acknowledges the entries r.acks collects, all those collected
// in one XACK, until stop closes (once the workers, which collect them,
// ended), and then those left. An XACK is not cancelled with ctx, so that
// a reconciler that stops leaves no entry of committed work to be
// delivered again; one that fails is delivered again after ClaimIdle or
// on restart, and finds its work done.
func (r *Reconciler) ackCommitted(ctx context.Context, stop <-chan struct{}) {
	r.acks.drain(stop, ackAfter, func(ids []string) {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackTimeout)
		defer cancel()
		if err := r.stream.ack(actx, ids); err != nil {
			r.log.WarnContext(ctx, "acknowledge work entries", "entries", len(ids), "err", err)
		}
	})
}
