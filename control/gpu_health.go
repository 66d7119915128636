package control

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/sqlc"
)

// ClearGPUHealth clears the unhealthy mark a fatal Xid left on a host's
// GPU, once an operator looked at the device: placement uses it again, the
// pool's PENDING instances are woken to take it, and the instance holding
// it loses the reason the mark gave it. Its last Xid stays. Operators only.
func (s *Service) ClearGPUHealth(ctx context.Context, hostID uuid.UUID, address string) (domain.Host, error) {
	var host sqlc.Host
	err := s.mutate(ctx, ActClearGPUHealth, func(ctx context.Context, _ pgx.Tx, q *sqlc.Queries, ev *audit.Event) error {
		ev.TargetID = hostID
		if _, err := operator(ctx); err != nil {
			return err
		}
		address = strings.ToLower(strings.TrimSpace(address))
		if !domain.IsPCIAddress(address) {
			return apierr.Invalid("address", "must be a PCI address such as 0000:65:00.0")
		}
		var err error
		if host, err = q.GetHost(ctx, hostID); err != nil {
			return notFound(err, "hostId", "host")
		}
		gpus, err := q.ListHostGPUs(ctx, []uuid.UUID{hostID})
		if err != nil {
			return fmt.Errorf("read GPUs: %w", err)
		}
		var before *domain.GPU
		for _, g := range gpus {
			if g.Address == address {
				gpu := domain.GPUFromRow(g)
				before = &gpu
			}
		}
		if before == nil {
			return apierr.NotFoundf("address", "host %s has no GPU %s", host.Name, address)
		}
		if _, err := q.ClearGPUHealth(ctx, sqlc.ClearGPUHealthParams{HostID: hostID, Address: address}); err != nil {
			return fmt.Errorf("clear GPU %s: %w", address, err)
		}
		if !before.Health.Healthy() {
			if err := clearGPUReason(ctx, q, host, *before); err != nil {
				return err
			}
		}
		if err := events.WakePending(ctx, q, host.PoolID); err != nil {
			return err
		}
		ev.Details = map[string]any{"address": address, "wasHealthy": before.Health.Healthy(), "reason": before.Health.Reason}
		return nil
	})
	return domain.HostFromRow(host), err
}

// clearGPUReason takes from the instance holding gpu the reason its
// unhealthy mark gave it, with the instance's live event.
func clearGPUReason(ctx context.Context, q *sqlc.Queries, host sqlc.Host, gpu domain.GPU) error {
	holder, err := q.GPUHolder(ctx, sqlc.GPUHolderParams{HostID: host.ID, Address: gpu.Address})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read holder of GPU %s: %w", gpu.Address, err)
	}
	inst, err := q.LockInstance(ctx, holder)
	if err != nil {
		return fmt.Errorf("lock holder of GPU %s: %w", gpu.Address, err)
	}
	if inst.StateReason != domain.GPUFailedReason(host.Name, gpu.Address, gpu.Health.Reason) {
		return nil
	}
	out, err := q.SetStateReason(ctx, sqlc.SetStateReasonParams{ID: inst.ID, Version: inst.Version, StateReason: ""})
	if err != nil {
		return fmt.Errorf("clear the reason of GPU %s's holder: %w", gpu.Address, err)
	}
	return events.Enqueue(ctx, q, vps.TopicEvents, events.Updated, out)
}
