package reconciler_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/sqlc"
)

// usageMismatches counts the hosts and tenants whose host_usage row is not
// what their live allocations sum to (a row of zeros for none).
const usageMismatches = `(SELECT 1 FROM
	(SELECT host_id, tenant_id, sum(vcpus) AS vcpus, sum(memory_mb) AS memory_mb, sum(disk_gb) AS disk_gb, count(*) AS n
	 FROM allocations WHERE released_at IS NULL GROUP BY host_id, tenant_id) a
	FULL JOIN (SELECT * FROM host_usage WHERE allocations <> 0 OR vcpus <> 0 OR memory_mb <> 0 OR disk_gb <> 0) u
	USING (host_id, tenant_id)
	WHERE a.n IS DISTINCT FROM u.allocations OR a.vcpus IS DISTINCT FROM u.vcpus
	   OR a.memory_mb IS DISTINCT FROM u.memory_mb OR a.disk_gb IS DISTINCT FROM u.disk_gb) wrong`

// TestHostUsageFollowsAllocations: host_usage, which placement reads, is
// what the live allocations sum to, per host and tenant, after allocations,
// releases (a second release of the same instance changing nothing), an
// allocation moved and one deleted.
func TestHostUsageFollowsAllocations(t *testing.T) {
	t.Parallel()
	e := setup(t)
	other, err := e.svc.CreateTenant(e.ctx, "globex")
	e.check(err)
	hosts := []uuid.UUID{e.host("hv-0", 100), e.host("hv-1", 100)}
	q := sqlc.New(e.db)
	// One statement allocates them all: the usage trigger sees several
	// rows of a host in one statement, as a batch of placements writes them.
	var insts []uuid.UUID
	var a sqlc.AllocateOnHostsParams
	for i := range 12 {
		tenant := e.tenant
		if i%3 == 0 {
			tenant = other.ID
		}
		inst := ids.New()
		insts = append(insts, inst)
		a.AllocationIds = append(a.AllocationIds, ids.New())
		a.HostIds = append(a.HostIds, hosts[i%2])
		a.TenantIds = append(a.TenantIds, tenant)
		a.InstanceIds = append(a.InstanceIds, inst)
		a.Vcpus = append(a.Vcpus, int32(1+i%4))
		a.MemoryMb = append(a.MemoryMb, int64(512*(1+i%3)))
		a.DiskGb = append(a.DiskGb, int64(10+i))
	}
	bumped, err := q.AllocateOnHosts(e.ctx, a)
	e.check(err)
	if len(bumped) != len(hosts) {
		t.Fatalf("%d host generations bumped, want %d (each host once)", len(bumped), len(hosts))
	}
	check := func(when string) {
		t.Helper()
		if n := e.count(usageMismatches); n != 0 {
			t.Fatalf("%s: %d host usage rows differ from the live allocations", when, n)
		}
	}
	check("allocated")
	for _, inst := range insts[:5] {
		n, err := q.ReleaseAllocation(e.ctx, inst)
		e.check(err)
		if n != 1 {
			t.Fatalf("released %d allocations of %s, want 1", n, inst)
		}
	}
	check("released")
	n, err := q.ReleaseAllocation(e.ctx, insts[0])
	e.check(err)
	if n != 0 {
		t.Fatalf("released %d allocations the second time, want 0", n)
	}
	check("released twice")
	_, err = e.db.Exec(e.ctx, "UPDATE allocations SET host_id = $1, vcpus = vcpus + 1 WHERE instance_id = $2", hosts[0], insts[7])
	e.check(err)
	_, err = e.db.Exec(e.ctx, "DELETE FROM allocations WHERE instance_id = $1", insts[8])
	e.check(err)
	check("moved and deleted")
	for _, inst := range insts {
		_, err := q.ReleaseAllocation(e.ctx, inst)
		e.check(err)
	}
	check("all released")
	if n := e.count("host_usage WHERE allocations <> 0 OR vcpus <> 0 OR memory_mb <> 0 OR disk_gb <> 0"); n != 0 {
		t.Fatalf("%d host usage rows hold something after every release", n)
	}
}
