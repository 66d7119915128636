package control

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/sqlc"
)

// historyLen is how many of an instance's state changes InstanceHistory
// returns: the last ones.
const historyLen = 200

// InstanceHistory returns the last changes of an instance's state, oldest
// first, as instance_state_history recorded them. The caller has read the
// instance: it is not checked again.
func (s *Service) InstanceHistory(ctx context.Context, id uuid.UUID) ([]domain.StateChange, error) {
	rows, err := s.q.InstanceHistory(ctx, sqlc.InstanceHistoryParams{InstanceID: id, Lim: historyLen})
	if err != nil {
		return nil, fmt.Errorf("read the history of instance %s: %w", id, err)
	}
	slices.Reverse(rows)
	return mapRows(rows, func(r sqlc.InstanceHistoryRow) domain.StateChange {
		return domain.StateChange{From: r.FromState, To: r.ToState, At: r.At}
	}), nil
}
