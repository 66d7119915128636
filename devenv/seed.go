package devenv

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/vps"
)

// Sim is what Seed set up for `dev --sim N`.
type Sim struct {
	// Credentials of the simulated hosts, by host name.
	Credentials map[string]string
	// Pool, Flavor and Image are the demo's, for the walk-through.
	Pool, Flavor, Image uuid.UUID
	// Tenant is the demo tenant.
	Tenant domain.Tenant
}

// SimPool is the hosted pool of the simulated hosts.
const SimPool = "sim"

// Seed makes, once, what a newcomer needs to create an instance at once: a
// hosted pool with n hosts (each given a fresh credential, since the last
// run's are not kept), flavors, a public image, an IP range and a demo
// tenant. It is idempotent: a second run finds what the first made.
func Seed(ctx context.Context, svc *control.Service, n int) (Sim, error) {
	ctx = iam.WithPrincipal(audit.WithRequestID(ctx, "dev-seed"), control.System)
	sim := Sim{Credentials: map[string]string{}}
	pool, err := findOr(ctx, svc.Pools, func(p domain.Pool) bool { return p.Name == SimPool }, func() (domain.Pool, error) {
		return svc.CreatePool(ctx, control.PoolInput{Name: SimPool, Class: vps.ClassHosted, Runtime: vps.RuntimeFake})
	})
	if err != nil {
		return sim, fmt.Errorf("seed pool: %w", err)
	}
	if pool.Runtime == nil || *pool.Runtime != vps.RuntimeFake {
		return sim, fmt.Errorf("seed pool: pool %s (made before pools named their runtime) does not run runtime %s, so the gateway would refuse its simulated hosts: start dev with a fresh --state-dir", SimPool, vps.RuntimeFake)
	}
	sim.Pool = pool.ID
	ranges, err := svc.IPPools(ctx, []uuid.UUID{pool.ID})
	if err != nil {
		return sim, err
	}
	if len(ranges[pool.ID]) == 0 {
		if _, err := svc.CreateIPPool(ctx, control.IPPoolInput{PoolID: pool.ID, CIDR: "10.77.0.0/24", Gateway: "10.77.0.1",
			RangeStart: "10.77.0.10", RangeEnd: "10.77.0.250", DNS: []string{"10.77.0.1"}}); err != nil {
			return sim, fmt.Errorf("seed IP range: %w", err)
		}
	}
	hosts, err := svc.Hosts(ctx)
	if err != nil {
		return sim, err
	}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("sim-%d", i)
		var nh control.NewHost
		if h, ok := find(hosts, func(h domain.Host) bool { return h.Name == name }); ok {
			nh, err = svc.ResetHostCredential(ctx, h.ID)
		} else {
			nh, err = svc.CreateHost(ctx, pool.ID, name)
		}
		if err != nil {
			return sim, fmt.Errorf("seed host %s: %w", name, err)
		}
		sim.Credentials[name] = nh.Credential
	}
	for _, f := range []control.FlavorInput{
		{Name: "small", Vcpus: 1, MemoryMB: 1024, DiskGB: 10},
		{Name: "medium", Vcpus: 2, MemoryMB: 4096, DiskGB: 40},
	} {
		flavor, err := findOr(ctx, svc.Flavors, func(x domain.Flavor) bool { return x.Name == f.Name }, func() (domain.Flavor, error) {
			return svc.CreateFlavor(ctx, f)
		})
		if err != nil {
			return sim, fmt.Errorf("seed flavor %s: %w", f.Name, err)
		}
		if sim.Flavor == uuid.Nil {
			sim.Flavor = flavor.ID
		}
	}
	img, err := findOr(ctx, svc.Images, func(x domain.Image) bool { return x.Name == "debian-12" && x.Visibility == "public" }, func() (domain.Image, error) {
		return svc.RegisterImage(ctx, control.ImageInput{Name: "debian-12", SourceURL: "file:///var/lib/better-compute/images/debian-12.qcow2",
			SHA256: strings.Repeat("0", 64), Format: "qcow2", Visibility: "public", Verified: true})
	})
	if err != nil {
		return sim, fmt.Errorf("seed image: %w", err)
	}
	sim.Image = img.ID
	sim.Tenant, err = findOr(ctx, svc.Tenants, func(t domain.Tenant) bool { return t.Name == "demo" }, func() (domain.Tenant, error) {
		return svc.CreateTenant(ctx, "demo")
	})
	if err != nil {
		return sim, fmt.Errorf("seed tenant: %w", err)
	}
	return sim, nil
}

// MemberToken makes a token for a member of the demo tenant.
func MemberToken(ctx context.Context, svc *control.Service, sim Sim) (string, error) {
	out, err := svc.IssueToken(ctx, control.APITokenInput{Name: "demo-member", TenantID: sim.Tenant.ID})
	return out.Secret, err
}

func find[T any](items []T, match func(T) bool) (T, bool) {
	for _, it := range items {
		if match(it) {
			return it, true
		}
	}
	var zero T
	return zero, false
}

func findOr[T any](ctx context.Context, list func(context.Context) ([]T, error), match func(T) bool, create func() (T, error)) (T, error) {
	items, err := list(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	if it, ok := find(items, match); ok {
		return it, nil
	}
	return create()
}
