package reconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// read feeds the queue from the stream: first this consumer's own pending
// entries (left by a crash), then new ones.
func (r *Reconciler) read(ctx context.Context) error {
	start := "0"
	for ctx.Err() == nil {
		es, err := r.stream.readGroup(ctx, start, 500*time.Millisecond)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.log.WarnContext(ctx, "read work stream", "err", err)
			sleep(ctx, time.Second)
			continue
		}
		if start == "0" && len(es) == 0 {
			start = ">"
		}
		r.enqueue(es)
	}
	return nil
}

// reclaim takes over the entries of consumers that died.
func (r *Reconciler) reclaim(ctx context.Context) error {
	t := time.NewTicker(r.cfg.ClaimIdle / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		es, err := r.stream.claim(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.WarnContext(ctx, "reclaim work entries", "err", err)
		}
		r.enqueue(es)
	}
}

func (r *Reconciler) enqueue(es []entry) {
	for _, e := range es {
		if r.kinds[e.topic] == nil {
			// Kept, not lost: an operator can replay it once a reconciler
			// that knows the topic runs.
			r.log.Error("dead-lettering a work entry of a topic no reconciler kind handles", "entry", e.id, "topic", e.topic, "key", keyID(e.topic, e.key))
			if err := r.stream.deadLetter(context.Background(), e); err != nil {
				r.log.Error("dead-letter work entry", "entry", e.id, "err", err)
			}
			continue
		}
		r.queue.add(Request{Topic: e.topic, Key: e.key}, e.id)
	}
}

// work hands the requests the queue gives out to their kinds until the
// queue closes. A request's stream entries are acknowledged (ackCommitted)
// once it is reconciled, or found terminal; a failure keeps them and backs
// off.
func (r *Reconciler) work(ctx context.Context) {
	for {
		req, ids, ok := r.queue.get()
		if !ok {
			return
		}
		began := time.Now()
		res, err := r.kinds[req.Topic].Reconcile(ctx, req)
		if err != nil && !IsTerminal(err) {
			if ctx.Err() != nil {
				return
			}
			r.metrics.reconciled(req.Topic, "retry", time.Since(began))
			r.log.WarnContext(ctx, "reconcile failed; backing off", "topic", req.Topic, "key", keyID(req.Topic, req.Key), "err", err)
			r.queue.retry(req, ids, res.RequeueAfter)
			continue
		}
		outcome := "ok"
		if err != nil {
			outcome = "terminal"
		}
		r.metrics.reconciled(req.Topic, outcome, time.Since(began))
		if err != nil {
			r.log.ErrorContext(ctx, "reconcile failed for good; dropping the work entry", "topic", req.Topic, "key", keyID(req.Topic, req.Key), "err", err)
		}
		r.acks.add(ids...)
		r.queue.done(req, nil, false)
		switch {
		case err != nil:
		case res.Requeue:
			r.queue.again(req)
		case res.RequeueAfter > 0:
			r.queue.after(req, res.RequeueAfter)
		}
	}
}

// retryReason says why an instance is retried, in words fit for its
// tenant, and how long the provider asked us to wait. An internal error's
// details stay in the log.
func retryReason(err error) (string, time.Duration) {
	var pe *cloud.Error
	if !errors.As(err, &pe) {
		return "retrying after an internal error", 0
	}
	if pe.Kind == cloud.RateLimited {
		return fmt.Sprintf("waiting for the provider's rate limit (%s)", pe.Message), pe.RetryAfter
	}
	return fmt.Sprintf("retrying after the provider failed: %s", pe.Message), 0
}

// recordFailure keeps why an instance is being retried in its stateReason.
func (r *Reconciler) recordFailure(ctx context.Context, id uuid.UUID, reason string) {
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		inst, err := q.GetInstance(ctx, id)
		if err != nil || inst.StateReason == reason {
			return err
		}
		out, err := q.SetStateReason(ctx, sqlc.SetStateReasonParams{ID: id, Version: inst.Version, StateReason: reason})
		if err != nil {
			return err
		}
		return events.Enqueue(ctx, q, TopicEvents, events.Updated, out)
	})
	if err != nil {
		r.log.WarnContext(ctx, "record failure reason", "instance", ids.Log(ids.Instance, id), "err", err)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
