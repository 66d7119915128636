package reconciler

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// deadlineBatch bounds the commands one query lists past their deadline.
const deadlineBatch = 500

// failOverdueCommands fails every command past its deadline that its host
// has not finished, each in its own transaction, and wakes their hosts,
// whose specs now tell them to abandon them.
func (r *Reconciler) failOverdueCommands(ctx context.Context) error {
	for {
		due, err := sqlc.New(r.db).OverdueCommands(ctx, deadlineBatch)
		if err != nil {
			return fmt.Errorf("list overdue commands: %w", err)
		}
		var wake []uuid.UUID
		for _, id := range due {
			host, failed, err := r.failOverdueCommand(ctx, id)
			if err != nil {
				r.wakeHosts(ctx, wake)
				return err
			}
			if failed {
				wake = append(wake, host)
			}
		}
		r.wakeHosts(ctx, wake)
		if len(due) < deadlineBatch {
			return nil
		}
	}
}

// failOverdueCommand fails a command as FAILED ("deadline passed") and
// abandoned, if it still is unfinished and past its deadline, bumps its
// host's spec generation and hands it to its kind's owner, in one
// transaction. Another reconciler's sweep, or the host's report of its
// end, that came first leaves it alone: failed is false.
func (r *Reconciler) failOverdueCommand(ctx context.Context, id uuid.UUID) (host uuid.UUID, failed bool, err error) {
	err = pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		q := sqlc.New(tx)
		h, err := q.FailOverdueCommand(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("fail it: %w", err)
		}
		if _, err := q.BumpHostGeneration(ctx, h); err != nil {
			return fmt.Errorf("bump host generation: %w", err)
		}
		if err := events.CommandEnded(ctx, q, id); err != nil {
			return err
		}
		host, failed = h, true
		return nil
	})
	if err != nil {
		return host, false, fmt.Errorf("fail overdue command %s: %w", ids.Log(ids.HostCommand, id), err)
	}
	return host, failed, nil
}
