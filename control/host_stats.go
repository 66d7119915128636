package control

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/sqlc"
)

// HostStatsPoint is one sample of what a host's instances used of it.
type HostStatsPoint struct {
	At time.Time
	// VcpusUsed is the vCPUs they used since the sample before; nil when
	// none of them was in it.
	VcpusUsed   *float64
	MemoryBytes int64
	Instances   int
}

// HostStats returns, oldest first, the latest samples of a host since
// since: operators only.
func (s *Service) HostStats(ctx context.Context, host uuid.UUID, since time.Time) ([]HostStatsPoint, error) {
	if _, err := operator(ctx); err != nil {
		return nil, err
	}
	rows, err := s.q.ListHostStats(ctx, sqlc.ListHostStatsParams{HostID: host, Since: since, Lim: MaxStatsPoints})
	if err != nil {
		return nil, fmt.Errorf("read host stats: %w", err)
	}
	out := make([]HostStatsPoint, len(rows))
	for i, r := range rows {
		out[len(rows)-1-i] = HostStatsPoint{At: r.At, VcpusUsed: r.VcpusUsed, MemoryBytes: r.MemoryBytes, Instances: int(r.Instances)}
	}
	return out, nil
}

// HostInstances lists the instances a host holds (not deleted), by name:
// operators only.
func (s *Service) HostInstances(ctx context.Context, host uuid.UUID) ([]domain.Instance, error) {
	if _, err := operator(ctx); err != nil {
		return nil, err
	}
	rows, err := s.q.InstancesOnHost(ctx, &host)
	if err != nil {
		return nil, fmt.Errorf("list the instances of host %s: %w", host, err)
	}
	return mapInstances(ctx, s.q, rows)
}
