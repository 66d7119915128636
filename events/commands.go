package events

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// CommandEnded hands a host command that became final (SUCCEEDED or
// FAILED) to the owner of its kind, in q's transaction: an outbox row on
// vps.TopicCommands keyed by the command's ID. Whatever ends a command (the
// gateway from its host's report, the reconciler at its deadline) calls it
// in the transaction that ends it.
func CommandEnded(ctx context.Context, q *sqlc.Queries, command uuid.UUID) error {
	if err := q.InsertOutbox(ctx, sqlc.InsertOutboxParams{Topic: vps.TopicCommands, Key: command}); err != nil {
		return fmt.Errorf("hand ended command to its owner: %w", err)
	}
	return nil
}

// WakePending hands a pool's PENDING instances to the reconciler, in q's
// transaction: something changed that may let them be placed (an upgraded
// host, an IP range added).
func WakePending(ctx context.Context, q *sqlc.Queries, pool uuid.UUID) error {
	pending, err := q.PendingInPool(ctx, pool)
	if err != nil {
		return fmt.Errorf("list pending instances: %w", err)
	}
	return Wake(ctx, q, pending)
}

// Wake hands instances to the reconciler, in q's transaction, in one
// statement however many they are.
func Wake(ctx context.Context, q *sqlc.Queries, instances []uuid.UUID) error {
	if len(instances) == 0 {
		return nil
	}
	if err := q.WakeKeys(ctx, sqlc.WakeKeysParams{Topic: vps.TopicInstances, Keys: instances}); err != nil {
		return fmt.Errorf("wake %d instances: %w", len(instances), err)
	}
	return nil
}
