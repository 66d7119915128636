package reconciler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/reconciler"
)

func patient(c *reconciler.Config) { c.HostSilentAfter = time.Hour }

func TestPlacementPolicies(t *testing.T) {
	t.Parallel()
	t.Run("spread fills hosts evenly", func(t *testing.T) {
		e := setup(t)
		e.poolWith("even", "spread", false)
		e.host("a", 10)
		e.host("b", 10)
		e.reconcilers(1, patient)
		for i := range 4 {
			e.create(fmt.Sprintf("vm-%d", i))
		}
		e.eventually(10*time.Second, "4 placed", func() bool { return e.count("instances WHERE state = 'PROVISIONING'") == 4 })
		if got := e.perHost(); got["a"] != 2 || got["b"] != 2 {
			t.Fatalf("per host %v, want 2 and 2", got)
		}
	})
	t.Run("pack fills one host first", func(t *testing.T) {
		e := setup(t)
		e.poolWith("dense", "pack", false)
		e.host("a", 10)
		e.host("b", 10)
		e.reconcilers(1, patient)
		for i := range 4 {
			e.create(fmt.Sprintf("vm-%d", i))
		}
		e.eventually(10*time.Second, "4 placed", func() bool { return e.count("instances WHERE state = 'PROVISIONING'") == 4 })
		if got := e.perHost(); got["a"]+got["b"] != 4 || (got["a"] != 4 && got["b"] != 4) {
			t.Fatalf("per host %v, want all 4 on one", got)
		}
	})
	t.Run("single tenant hosts serve one tenant at a time", func(t *testing.T) {
		e := setup(t)
		e.poolWith("private", "spread", true)
		e.host("a", 10)
		e.host("b", 10)
		other, err := e.svc.CreateTenant(e.ctx, "globex")
		e.check(err)
		third, err := e.svc.CreateTenant(e.ctx, "initech")
		e.check(err)
		e.reconcilers(1, patient)
		e.create("acme-1")
		e.create("acme-2")
		e.createFor(other.ID, e.flavor, "globex-1")
		e.eventually(10*time.Second, "3 placed", func() bool { return e.count("instances WHERE state = 'PROVISIONING'") == 3 })
		late := e.createFor(third.ID, e.flavor, "initech-1")
		e.eventually(10*time.Second, "the third tenant waiting", func() bool {
			return e.count("instances WHERE id = $1 AND state = 'PENDING' AND state_reason LIKE 'no live host%'", late) == 1
		})
		if n := e.count(`(SELECT host_id FROM allocations WHERE released_at IS NULL GROUP BY host_id HAVING count(DISTINCT tenant_id) > 1) mixed`); n != 0 {
			t.Fatalf("%d hosts serve two tenants", n)
		}
		if got := e.perHost(); got["a"]+got["b"] != 3 || (got["a"] != 2 && got["b"] != 2) {
			t.Fatalf("per host %v: acme's two instances should share a host", got)
		}
	})
}

// TestGPUClaims places GPU instances on specific devices, passes them in
// the spec, and leaves the one that does not fit PENDING until a device
// frees; then it is placed at once.
func TestGPUClaims(t *testing.T) {
	t.Parallel()
	e := setup(t)
	host := e.host("gpu-1", 32)
	_, err := e.svc.SetHostCapacity(e.ctx, control.HostCapacityInput{HostID: host, Vcpus: 32, MemoryMB: 131072, DiskGB: 1000,
		GPUs: []domain.GPU{{Address: "0000:65:00.0", Vendor: "NVIDIA", Model: "L40S"}, {Address: "0000:66:00.0", Vendor: "NVIDIA", Model: "L40S"}}})
	e.check(err)
	gpu, err := e.svc.CreateFlavor(e.ctx, control.FlavorInput{Name: "gpu", Vcpus: 4, MemoryMB: 16384, DiskGB: 50, GPUModel: "L40S", GPUCount: 1})
	e.check(err)
	e.reconcilers(1, patient)
	for i := range 3 {
		e.createFor(e.tenant, gpu.ID, fmt.Sprintf("gpu-%d", i))
	}
	e.eventually(10*time.Second, "2 placed, 1 waiting for a GPU", func() bool {
		return e.count("instances WHERE state = 'PROVISIONING'") == 2 &&
			e.count("instances WHERE state = 'PENDING' AND state_reason LIKE '%1 × L40S%'") == 1
	})
	if n := e.count("(SELECT DISTINCT address FROM device_claims WHERE released_at IS NULL) d"); n != 2 {
		t.Fatalf("%d distinct devices claimed, want 2", n)
	}

	// Delete a placed one; the host confirms it is gone, as its report would.
	var placed uuid.UUID
	e.db.QueryRow(context.Background(), "SELECT id FROM instances WHERE state = 'PROVISIONING' LIMIT 1").Scan(&placed)
	_, err = e.svc.SetDesiredState(e.ctx, placed, "DELETED")
	e.check(err)
	e.eventually(10*time.Second, "DELETING", func() bool { return e.count("instances WHERE id = $1 AND state = 'DELETING'", placed) == 1 })
	_, err = e.db.Exec(context.Background(), "UPDATE instances SET observed_state = 'absent' WHERE id = $1", placed)
	e.check(err)
	_, err = e.db.Exec(context.Background(), "INSERT INTO outbox (topic, key) VALUES ('vps.instances', $1)", placed)
	e.check(err)
	e.eventually(10*time.Second, "the waiting one placed on the freed GPU", func() bool {
		return e.count("instances WHERE state = 'PROVISIONING'") == 2 && e.count("instances WHERE id = $1 AND state = 'DELETED'", placed) == 1
	})
	if n := e.count("device_claims WHERE released_at IS NULL"); n != 2 {
		t.Fatalf("%d live device claims, want 2", n)
	}
	if n := e.count("device_claims WHERE instance_id = $1 AND released_at IS NOT NULL", placed); n != 1 {
		t.Fatalf("the deleted instance's claim released %d times, want once", n)
	}
}
