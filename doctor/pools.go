package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/better-compute/vps/ids"
)

// checkPools finds hosted pools whose runtime the deployment does not run
// (vps.pools.runtime), whose runtime shares a kernel between guests while
// the pool is not single-tenant (vps.pools.single-tenant), and that have no
// IP range to give their instances an address (vps.pools.ipam).
func checkPools(ctx context.Context, d *Doctor) ([]Finding, error) {
	pools, err := d.q.DoctorHostedPools(ctx)
	if err != nil {
		return nil, fmt.Errorf("list hosted pools: %w", err)
	}
	var out []Finding
	for _, p := range pools {
		id := ids.Encode(ids.Pool, p.ID)
		runtime := ""
		if p.Runtime != nil {
			runtime = *p.Runtime
		}
		if !slices.Contains(d.cfg.Runtimes, runtime) {
			out = append(out, Finding{
				Code: "vps.pools.runtime", Level: LevelError, Objects: []string{id},
				Message: fmt.Sprintf("pool %s runs runtime %q, which the deployment does not list (BC_RUNTIMES: %s); the gateway refuses its hosts", p.Name, runtime, strings.Join(d.cfg.Runtimes, ", ")),
				Remedy:  fmt.Sprintf("add %s to BC_RUNTIMES on every serve, or move the pool's instances to a pool of a listed runtime", runtime),
			})
		}
		if rt, ok := d.lookup(runtime); ok && rt.SharedKernel && !p.SingleTenant {
			out = append(out, Finding{
				Code: "vps.pools.single-tenant", Level: LevelError, Objects: []string{id},
				Message: fmt.Sprintf("pool %s runs runtime %s, whose guests share the host's kernel, but is not single-tenant: tenants' guests may share a host", p.Name, runtime),
				Remedy:  "make the pool single-tenant (policy.singleTenant), or use a runtime that gives each guest its own kernel",
			})
		}
		if !p.HasIpRange {
			out = append(out, Finding{
				Code: "vps.pools.ipam", Level: LevelError, Objects: []string{id},
				Message: fmt.Sprintf("hosted pool %s has no IP range: its instances stay PENDING, with no address to give them", p.Name),
				Remedy:  "add an IP range to the pool (createIpPool)",
			})
		}
	}
	return out, nil
}
