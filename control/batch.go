package control

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/sqlc"
)

// The batch reads below load the objects an already authorized object
// refers to (an instance's pool, flavor, …), many at once, for the API's
// per-request loaders. They do no authorization of their own.

// TenantsByID loads tenants, deleted ones included.
func (s *Service) TenantsByID(ctx context.Context, keys []uuid.UUID) (map[uuid.UUID]domain.Tenant, error) {
	return byID(ctx, "tenants", keys, s.q.GetTenantsByIDs, func(t sqlc.Tenant) uuid.UUID { return t.ID }, domain.TenantFromRow)
}

// PrincipalNames loads the names of principals as the caller may see
// them: operators see every name; members see their tenant's principals by
// name and any other (an operator acting on their tenant) as "an operator".
func (s *Service) PrincipalNames(ctx context.Context, keys []uuid.UUID) (map[uuid.UUID]string, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := byID(ctx, "principals", keys, s.q.GetPrincipalsByIDs, func(p sqlc.Principal) uuid.UUID { return p.ID }, domain.PrincipalFromRow)
	if err != nil {
		return nil, err
	}
	names := make(map[uuid.UUID]string, len(rows))
	for id, row := range rows {
		names[id] = row.Name
		if !p.IsOperator() && (row.TenantID == nil || *row.TenantID != p.TenantID) {
			names[id] = "an operator"
		}
	}
	return names, nil
}

// InstancesByID loads instances with their addresses, deleted ones
// included (a sandbox's instance).
func (s *Service) InstancesByID(ctx context.Context, keys []uuid.UUID) (map[uuid.UUID]domain.Instance, error) {
	rows, err := s.q.GetInstancesByIDs(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("load instances: %w", err)
	}
	insts, err := mapInstances(ctx, s.q, rows)
	if err != nil {
		return nil, err
	}
	m := make(map[uuid.UUID]domain.Instance, len(insts))
	for _, inst := range insts {
		m[inst.ID] = inst
	}
	return m, nil
}

// PoolsByID loads pools.
func (s *Service) PoolsByID(ctx context.Context, keys []uuid.UUID) (map[uuid.UUID]domain.Pool, error) {
	return byID(ctx, "pools", keys, s.q.GetPoolsByIDs, func(p sqlc.Pool) uuid.UUID { return p.ID }, domain.PoolFromRow)
}

// FlavorsByID loads flavors.
func (s *Service) FlavorsByID(ctx context.Context, keys []uuid.UUID) (map[uuid.UUID]domain.Flavor, error) {
	return byID(ctx, "flavors", keys, s.q.GetFlavorsByIDs, func(f sqlc.Flavor) uuid.UUID { return f.ID }, domain.FlavorFromRow)
}

// ImagesByID loads images, deleted ones included.
func (s *Service) ImagesByID(ctx context.Context, keys []uuid.UUID) (map[uuid.UUID]domain.Image, error) {
	return byID(ctx, "images", keys, s.q.GetImagesByIDs, func(i sqlc.Image) uuid.UUID { return i.ID }, domain.ImageFromRow)
}

// HostsByID loads hosts.
func (s *Service) HostsByID(ctx context.Context, keys []uuid.UUID) (map[uuid.UUID]domain.Host, error) {
	return byID(ctx, "hosts", keys, s.q.GetHostsByIDs, func(h sqlc.Host) uuid.UUID { return h.ID }, domain.HostFromRow)
}

// HostCapacities loads the capacities of hosts; a host without one is absent.
func (s *Service) HostCapacities(ctx context.Context, keys []uuid.UUID) (map[uuid.UUID]domain.HostCapacity, error) {
	return byID(ctx, "host capacity", keys, s.q.GetHostCapacities, func(c sqlc.HostCapacity) uuid.UUID { return c.HostID }, domain.HostCapacityFromRow)
}

// HostAllocations sums what live allocations hold on hosts.
func (s *Service) HostAllocations(ctx context.Context, keys []uuid.UUID) (map[uuid.UUID]domain.HostAllocation, error) {
	return byID(ctx, "host allocations", keys, s.q.HostAllocations, func(a sqlc.HostAllocationsRow) uuid.UUID { return a.HostID }, domain.HostAllocationFromRow)
}

// HostGPUs loads the GPU inventory of hosts.
func (s *Service) HostGPUs(ctx context.Context, keys []uuid.UUID) (map[uuid.UUID][]domain.GPU, error) {
	gpus, err := groupByID(ctx, "host GPUs", keys, s.q.ListHostGPUs, func(g sqlc.HostGpu) uuid.UUID { return g.HostID })
	if err != nil {
		return nil, err
	}
	return mapGroups(gpus, domain.GPUFromRow), nil
}

// IPPools loads the address ranges of pools.
func (s *Service) IPPools(ctx context.Context, keys []uuid.UUID) (map[uuid.UUID][]domain.IPPool, error) {
	ranges, err := groupByID(ctx, "IP pools", keys, s.q.ListIPPools, func(p sqlc.IpPool) uuid.UUID { return p.PoolID })
	if err != nil {
		return nil, err
	}
	return mapGroups(ranges, domain.IPPoolFromRow), nil
}

// LeaseCounts counts the live leases of IP pools as the caller may see
// them: operators count every lease; members only their tenant's, since a
// pool tenants share would otherwise tell each how much the others use.
func (s *Service) LeaseCounts(ctx context.Context, keys []uuid.UUID) (map[uuid.UUID]int, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.q.CountLiveLeases(ctx, sqlc.CountLiveLeasesParams{IpPoolIds: keys, Tenant: p.TenantFilter()})
	if err != nil {
		return nil, fmt.Errorf("count IP leases: %w", err)
	}
	m := make(map[uuid.UUID]int, len(rows))
	for _, r := range rows {
		m[r.IpPoolID] = int(r.Leased)
	}
	return m, nil
}

// byID loads rows by key and maps each with fromRow.
func byID[R, T any](ctx context.Context, what string, keys []uuid.UUID, get func(context.Context, []uuid.UUID) ([]R, error), key func(R) uuid.UUID, fromRow func(R) T) (map[uuid.UUID]T, error) {
	rows, err := get(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", what, err)
	}
	m := make(map[uuid.UUID]T, len(rows))
	for _, r := range rows {
		m[key(r)] = fromRow(r)
	}
	return m, nil
}

// groupByID loads rows by key, grouped by key.
func groupByID[T any](ctx context.Context, what string, keys []uuid.UUID, get func(context.Context, []uuid.UUID) ([]T, error), key func(T) uuid.UUID) (map[uuid.UUID][]T, error) {
	rows, err := get(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", what, err)
	}
	m := make(map[uuid.UUID][]T, len(keys))
	for _, r := range rows {
		m[key(r)] = append(m[key(r)], r)
	}
	return m, nil
}

// mapGroups maps grouped rows with one of package domain's XFromRow functions.
func mapGroups[R, T any](groups map[uuid.UUID][]R, fromRow func(R) T) map[uuid.UUID][]T {
	m := make(map[uuid.UUID][]T, len(groups))
	for k, rows := range groups {
		m[k] = mapRows(rows, fromRow)
	}
	return m
}
