package control

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/sqlc"
)

// UsageGroup is a key usage totals are grouped by.
type UsageGroup string

// The keys usage may be grouped by.
const (
	ByTenant   UsageGroup = "TENANT"
	ByPool     UsageGroup = "POOL"
	ByFlavor   UsageGroup = "FLAVOR"
	ByInstance UsageGroup = "INSTANCE"
	ByDay      UsageGroup = "DAY"
)

// UsageGroups are the keys, in the order totals are sorted and a CSV's
// columns are written.
var UsageGroups = []UsageGroup{ByDay, ByTenant, ByPool, ByFlavor, ByInstance}

// MaxUsageRange is the longest range one usage query may span.
const MaxUsageRange = 366 * 24 * time.Hour

// UsageQuery asks for usage totals.
type UsageQuery struct {
	// From and To bound the intervals summed: those starting in [From, To).
	From, To time.Time
	// GroupBy are the keys totals are grouped by; none: one total.
	GroupBy []UsageGroup
	// TenantID limits the totals to one tenant: any for operators, their
	// own for members (who see only theirs in any case).
	TenantID *uuid.UUID
}

// UsageTotal is the usage of one group: the keys grouped by are set.
type UsageTotal struct {
	TenantID, PoolID, FlavorID, InstanceID *uuid.UUID
	Day                                    *time.Time
	// Seconds spent in each state class, summed over instances.
	RunningSeconds, PausedSeconds, StoppedSeconds, OtherSeconds float64
	// What is billed: vCPUs while RUNNING, memory and GPUs while RUNNING or
	// PAUSED, disk while RUNNING, PAUSED or STOPPED.
	VcpuHours, MemoryGiBHours, DiskGiBHours, GpuHours float64
}

// ParseUsageGroups reads group keys by name; an unknown one is
// INVALID_INPUT on field.
func ParseUsageGroups(field string, names []string) ([]UsageGroup, error) {
	out := make([]UsageGroup, 0, len(names))
	for _, n := range names {
		g := UsageGroup(n)
		if !slices.Contains(UsageGroups, g) {
			return nil, apierr.Invalid(field, "unknown group %q: one of TENANT, POOL, FLAVOR, INSTANCE, DAY", n)
		}
		out = append(out, g)
	}
	return out, nil
}

// Usage sums the metered usage the caller may see.
func (s *Service) Usage(ctx context.Context, in UsageQuery) ([]UsageTotal, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case !in.To.After(in.From):
		return nil, apierr.Invalid("to", "must be after from")
	case in.To.Sub(in.From) > MaxUsageRange:
		return nil, apierr.Invalid("to", "the range may span at most 366 days")
	}
	tenant := in.TenantID
	if !p.IsOperator() {
		if tenant != nil && *tenant != p.TenantID {
			return nil, apierr.NotFoundf("tenantId", "tenant not found")
		}
		tenant = p.TenantFilter()
	}
	by := func(g UsageGroup) bool { return slices.Contains(in.GroupBy, g) }
	rows, err := s.q.UsageTotals(ctx, sqlc.UsageTotalsParams{
		ByTenant: by(ByTenant), ByPool: by(ByPool), ByFlavor: by(ByFlavor), ByInstance: by(ByInstance), ByDay: by(ByDay),
		FromTime: in.From, ToTime: in.To, Tenant: tenant, Lim: int32(s.maxUsageTotals) + 1,
	})
	if err != nil {
		return nil, fmt.Errorf("sum usage: %w", err)
	}
	if len(rows) > s.maxUsageTotals {
		return nil, &apierr.Error{Code: apierr.InvalidInput, Limit: "totals",
			Message: fmt.Sprintf("more than %d totals: narrow the range or group by less", s.maxUsageTotals)}
	}
	out := make([]UsageTotal, len(rows))
	for i, r := range rows {
		t := UsageTotal{
			RunningSeconds: r.RunningSeconds, PausedSeconds: r.PausedSeconds, StoppedSeconds: r.StoppedSeconds, OtherSeconds: r.OtherSeconds,
			VcpuHours: r.VcpuHours, MemoryGiBHours: r.MemoryGibHours, DiskGiBHours: r.DiskGibHours, GpuHours: r.GpuHours,
		}
		if by(ByTenant) {
			t.TenantID = &r.TenantID
		}
		if by(ByPool) {
			t.PoolID = &r.PoolID
		}
		if by(ByFlavor) {
			t.FlavorID = &r.FlavorID
		}
		if by(ByInstance) {
			t.InstanceID = &r.InstanceID
		}
		if by(ByDay) {
			d := r.Day.UTC()
			t.Day = &d
		}
		out[i] = t
	}
	return out, nil
}
