package reconciler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/better-compute/vps/sqlc"
)

// relay moves outbox rows to Redis: work topics to the work stream (where
// one no kind handles is dead-lettered, not lost), events to their
// channels. A row is deleted only after Redis took it, so a crash between
// the two only repeats it (work coalesces; clients dedupe events by
// version).
//
// One relay of all the reconcilers leads (lead): it publishes each row
// from its notification as soon as the writer commits. Every relay,
// the leader included, also claims the rows older than relayAge each
// relayTick (claim): a dead leader's, or rows whose notification went
// nowhere.
func (r *Reconciler) relay(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { r.lead(ctx); return nil })
	g.Go(func() error {
		tick := time.NewTicker(relayTick)
		defer tick.Stop()
		for {
			if err := r.claim(ctx, relayAge, nil); err != nil && ctx.Err() == nil {
				r.log.WarnContext(ctx, "relay outbox", "err", err)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		}
	})
	return g.Wait()
}

const (
	relayBatch = 500
	// relayDeleteAfter is how long the leader gathers published rows
	// before it deletes them, in one statement.
	relayDeleteAfter = 100 * time.Millisecond
	// relayAge is how old a row is before every relay claims it, not only
	// the leader.
	relayAge = 3 * time.Second
	// relayTick is how often every relay claims rows older than relayAge.
	relayTick = time.Second
	// leadPoll is how often a relay that does not lead asks to; a leader
	// whose connection failed waits leadRetry, so a follower takes over.
	leadPoll  = 250 * time.Millisecond
	leadRetry = time.Second
	// leadLock is the session advisory lock the leader holds on its
	// listening connection.
	leadLock = 0x0b7_7e1a
	// relayDeleteTimeout bounds the delete of rows the leader published.
	relayDeleteTimeout = 5 * time.Second
)

// relayTx begins a transaction of the relay in one round trip. Its commit
// does not wait for the WAL flush: a delete lost in a crash only repeats
// rows, which the relay allows anyway.
var relayTx = pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL synchronous_commit = off"}

// claim publishes and deletes, batch by batch in id order, the rows
// written at least age ago; it waits for rows another relay claimed
// rather than publish past them. seen, if not nil, gets the ids claimed.
func (r *Reconciler) claim(ctx context.Context, age time.Duration, seen map[int64]bool) error {
	for {
		var n int
		err := pgx.BeginTxFunc(ctx, r.db, relayTx, func(tx pgx.Tx) error {
			rows, err := sqlc.New(tx).ClaimOutbox(ctx, sqlc.ClaimOutboxParams{AgeSeconds: age.Seconds(), Lim: relayBatch})
			if err != nil {
				return fmt.Errorf("claim outbox: %w", err)
			}
			n = len(rows)
			// DELETE … RETURNING returns rows in no set order.
			slices.SortFunc(rows, func(a, b sqlc.Outbox) int { return cmp.Compare(a.ID, b.ID) })
			for _, row := range rows {
				if seen != nil {
					seen[row.ID] = true
				}
			}
			return r.publish(ctx, "claimed", rows)
		})
		if err != nil || n < relayBatch {
			return err
		}
	}
}

// publish hands rows to Redis, in their order, in one round trip.
func (r *Reconciler) publish(ctx context.Context, path string, rows []sqlc.Outbox) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
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
	r.metrics.relayed.WithLabelValues(path).Add(float64(len(rows)))
	return nil
}

// lead asks, every leadPoll, to lead the relays, and leads while it may.
func (r *Reconciler) lead(ctx context.Context) {
	for ctx.Err() == nil {
		led, err := r.leadOnce(ctx)
		wait := leadPoll
		if led {
			wait = leadRetry
			if ctx.Err() == nil {
				r.log.WarnContext(ctx, "lead the outbox relay", "err", err)
			}
		}
		sleep(ctx, wait)
	}
}

// leadOnce takes the leader's lock on a connection of its own and, if it
// got it, leads until the connection or Redis fails: it listens to the
// outbox's notifications, claims the rows written before it listened,
// then publishes every row from its notification. Postgres delivers the
// notifications of different transactions in commit order, so each
// instance's events go out in the order they were committed. led says
// whether it got the lock.
func (r *Reconciler) leadOnce(ctx context.Context) (led bool, err error) {
	pc, err := r.db.Acquire(ctx)
	if err != nil {
		return false, err
	}
	if err := pc.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", leadLock).Scan(&led); err != nil || !led {
		pc.Release()
		return false, err
	}
	// The lock is the session's: the connection leaves the pool and
	// closes with it.
	conn := pc.Hijack()
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		conn.Close(ctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN outbox"); err != nil {
		return true, fmt.Errorf("listen: %w", err)
	}
	seen := map[int64]bool{}
	if err := r.claim(ctx, 0, seen); err != nil {
		return true, fmt.Errorf("claim what was written before listening: %w", err)
	}
	// From here on, every row committed is published from its notification.
	r.metrics.leader.Set(1)
	defer r.metrics.leader.Set(0)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	notes := make(chan string, relayBatch)
	var g errgroup.Group
	g.Go(func() error {
		defer cancel()
		defer close(notes)
		for {
			n, err := conn.WaitForNotification(ctx)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return fmt.Errorf("wait for notification: %w", err)
			}
			select {
			case notes <- n.Payload:
			case <-ctx.Done():
				return nil
			}
		}
	})
	del := newGather[int64]()
	g.Go(func() error { r.deleteRelayed(ctx, del); return nil })
	err = r.publishNotified(ctx, notes, seen, del)
	cancel()
	return true, errors.Join(err, g.Wait())
}

// publishNotified publishes the rows of the notifications as they come,
// those that came together in one round trip, until notes closes or
// ctx ends. It fetches a row whose notification carried only its id
// before it publishes any later one; a row gone meanwhile was published
// by another relay.
func (r *Reconciler) publishNotified(ctx context.Context, notes <-chan string, seen map[int64]bool, del *gather[int64]) error {
	q := sqlc.New(r.db)
	for {
		var batch []string
		select {
		case <-ctx.Done():
			return nil
		case n, ok := <-notes:
			if !ok {
				return nil
			}
			batch = append(batch, n)
		}
	more:
		for len(batch) < relayBatch {
			select {
			case n, ok := <-notes:
				if !ok {
					break more
				}
				batch = append(batch, n)
			default:
				break more
			}
		}
		rows := make([]sqlc.Outbox, 0, len(batch))
		for _, n := range batch {
			row, ok, err := r.noted(ctx, q, n)
			if err != nil {
				return err
			}
			if !ok || seen[row.ID] {
				delete(seen, row.ID)
				continue
			}
			rows = append(rows, row)
		}
		if err := r.publish(ctx, "notified", rows); err != nil {
			return err
		}
		ids := make([]int64, len(rows))
		for i, row := range rows {
			ids[i] = row.ID
		}
		del.add(ids...)
	}
}

// noted is the row a notification names; ok is false when it names none
// (any more). outbox_notify sends "id topic key channel", a newline and
// the payload, or the id alone when the row would pass Postgres's limit
// for a notification: that row is read.
func (r *Reconciler) noted(ctx context.Context, q *sqlc.Queries, payload string) (sqlc.Outbox, bool, error) {
	head, body, whole := strings.Cut(payload, "\n")
	id, rest, _ := strings.Cut(head, " ")
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		r.log.WarnContext(ctx, "outbox notification not understood", "payload", payload, "err", err)
		return sqlc.Outbox{}, false, nil
	}
	if !whole {
		row, err := q.GetOutbox(ctx, n)
		if errors.Is(err, pgx.ErrNoRows) {
			return sqlc.Outbox{}, false, nil
		}
		if err != nil {
			return sqlc.Outbox{}, false, fmt.Errorf("read outbox row %d: %w", n, err)
		}
		return row, true, nil
	}
	topic, rest, _ := strings.Cut(rest, " ")
	key, channel, _ := strings.Cut(rest, " ")
	row := sqlc.Outbox{ID: n, Topic: topic}
	if err := row.Key.UnmarshalText([]byte(key)); err != nil || topic == "" {
		r.log.WarnContext(ctx, "outbox notification not understood", "payload", payload, "err", err)
		return sqlc.Outbox{}, false, nil
	}
	if channel != "" {
		row.Channel = &channel
	}
	if body != "" {
		row.Payload = []byte(body)
	}
	return row, true, nil
}

// deleteRelayed deletes the rows whose ids d collects, all those collected
// in one statement, until ctx ends, and then those left. A delete is not
// cancelled with ctx, so that a leader that stops leaves no row it
// published to be published again; a row it fails to delete is published
// again by a claim, after relayAge.
func (r *Reconciler) deleteRelayed(ctx context.Context, d *gather[int64]) {
	// A delete of many rows costs what one of a row does (three round
	// trips), so it waits relayDeleteAfter for more, well before relayAge.
	d.drain(ctx.Done(), relayDeleteAfter, func(ids []int64) {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), relayDeleteTimeout)
		defer cancel()
		err := pgx.BeginTxFunc(dctx, r.db, relayTx, func(tx pgx.Tx) error {
			return sqlc.New(tx).DeleteOutbox(dctx, ids)
		})
		if err != nil {
			r.log.WarnContext(ctx, "delete relayed outbox rows", "rows", len(ids), "err", err)
		}
	})
}
