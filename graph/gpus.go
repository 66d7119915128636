package graph

import (
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/graph/model"
)

// gpuModel is a host's GPU with its health.
func gpuModel(g domain.GPU) model.Gpu {
	out := model.Gpu{Address: g.Address, Vendor: g.Vendor, Model: g.Model, Healthy: g.Health.Healthy(),
		UnhealthySince: g.Health.UnhealthySince, LastXidAt: g.Health.LastXidAt}
	if g.Health.Reason != "" {
		out.HealthReason = &g.Health.Reason
	}
	if g.Health.LastXid != 0 {
		out.LastXid = &g.Health.LastXid
	}
	return out
}
