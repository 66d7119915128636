package reconciler

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/sqlc"
)

// QueueCommand queues a command for host as a kind would, in its own
// transaction, for the tests outside the package; it returns its ID.
func QueueCommand(ctx context.Context, db *pgxpool.Pool, host uuid.UUID, kind string, lane hostproto.Lane, payload any, timeout time.Duration) (uuid.UUID, error) {
	var id uuid.UUID
	var wake []uuid.UUID
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		row, err := queueCommand(ctx, sqlc.New(tx), command{host: host, kind: kind, lane: lane, payload: payload, timeout: timeout}, &wake)
		id = row.ID
		return err
	})
	return id, err
}

// LeadLock is the advisory lock the leading relay holds.
const LeadLock = leadLock

// WakeHosts wakes hosts as a step's commit does.
func (r *Reconciler) WakeHosts(ctx context.Context, hosts []uuid.UUID) { r.wakeHosts(ctx, hosts) }
