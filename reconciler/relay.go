package reconciler

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/sqlc"
)

// relay moves outbox rows to Redis: work topics to the work stream (where
// one no kind handles is dead-lettered, not lost), events
// to their channels. Rows are deleted in the transaction that read them,
// committed after Redis took them, so a crash between the two only repeats
// them (work coalesces; clients dedupe events by version). Several relays
// take turns: one waits for the rows another claimed, so that each
// instance's events are published in the order they were committed.
//
// It reads the outbox when woken by the outbox_notify trigger, and again
// at once only after a full batch: a row committed while it worked wakes
// it again, and the ticker is the backstop for a lost notification. A
// wake-up already waiting when it starts to read is dropped: its rows
// were committed before the read, which sees them.
func (r *Reconciler) relay(ctx context.Context) error {
	wake := make(chan struct{}, 1)
	go r.listen(ctx, wake)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	failures := 0
	for {
		select {
		case <-wake:
		default:
		}
		n, err := r.relayBatch(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.log.WarnContext(ctx, "relay outbox", "err", err)
			sleep(ctx, backoff(failures+6))
			failures++
			continue
		}
		failures = 0
		if n == relayBatch {
			continue // there may be more
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-tick.C:
		}
	}
}

const relayBatch = 500

// relayTx begins the relay's transaction in one round trip. Its commit does
// not wait for the WAL flush: a delete lost in a crash only repeats rows,
// which the relay allows anyway, and the flush (milliseconds) otherwise
// holds up the next batch's events.
var relayTx = pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL synchronous_commit = off"}

func (r *Reconciler) relayBatch(ctx context.Context) (int, error) {
	var n int
	err := pgx.BeginTxFunc(ctx, r.db, relayTx, func(tx pgx.Tx) error {
		rows, err := sqlc.New(tx).ClaimOutbox(ctx, relayBatch)
		if err != nil {
			return fmt.Errorf("claim outbox: %w", err)
		}
		if n = len(rows); n == 0 {
			return nil
		}
		// DELETE … RETURNING returns rows in no set order.
		slices.SortFunc(rows, func(a, b sqlc.Outbox) int { return cmp.Compare(a.ID, b.ID) })
		_, err = r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, row := range rows {
				if row.Topic != TopicEvents {
					p.XAdd(ctx, &redis.XAddArgs{Stream: r.stream.key, MaxLen: r.cfg.StreamMaxLen, Approx: true,
						Values: []string{"topic", row.Topic, "key", row.Key.String()}})
				}
				if row.Channel != nil && row.Payload != nil {
					p.Publish(ctx, r.cfg.Prefix+*row.Channel, row.Payload)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("hand outbox to redis: %w", err)
		}
		return nil
	})
	return n, err
}

// listen signals wake whenever the outbox_notify trigger fires.
func (r *Reconciler) listen(ctx context.Context, wake chan<- struct{}) {
	for ctx.Err() == nil {
		err := func() error {
			conn, err := r.db.Acquire(ctx)
			if err != nil {
				return err
			}
			defer conn.Release()
			if _, err := conn.Exec(ctx, "LISTEN outbox"); err != nil {
				return err
			}
			for {
				if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
					return err
				}
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}()
		if ctx.Err() == nil {
			r.log.WarnContext(ctx, "listen for outbox", "err", err)
			sleep(ctx, time.Second)
		}
	}
}
