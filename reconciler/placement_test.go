package reconciler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/reconciler"
)

// TestConcurrentPlacement has two reconcilers place 100 instances at once
// on three hosts with room for 30: no host is oversubscribed, no address is
// leased twice, and the rest wait in PENDING with a reason.
func TestConcurrentPlacement(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for i := range 3 {
		e.host(fmt.Sprintf("hv-%d", i), 10)
	}
	_, err := e.svc.CreateIPPool(e.ctx, control.IPPoolInput{PoolID: e.pool, CIDR: "10.9.0.0/24", Gateway: "10.9.0.1", RangeStart: "10.9.0.10", RangeEnd: "10.9.0.59"})
	e.check(err)
	for i := range 100 {
		e.create(fmt.Sprintf("vm-%d", i))
	}
	e.reconcilers(2, func(c *reconciler.Config) { c.HostSilentAfter = time.Hour })

	e.eventually(30*time.Second, "30 placed and 70 waiting with a reason", func() bool {
		return e.count("instances WHERE state = 'PROVISIONING'") == 30 &&
			e.count("instances WHERE state = 'PENDING' AND state_reason LIKE 'no live host in pool fra1 has room%'") == 70
	})
	if n := e.count(`(SELECT h.id FROM hosts h JOIN host_capacity c ON c.host_id = h.id
		JOIN allocations a ON a.host_id = h.id AND a.released_at IS NULL
		GROUP BY h.id, c.vcpus HAVING sum(a.vcpus) > c.vcpus) over`); n != 0 {
		t.Fatalf("%d hosts oversubscribed", n)
	}
	if n := e.count("allocations WHERE released_at IS NULL"); n != 30 {
		t.Fatalf("live allocations = %d, want 30", n)
	}
	if n := e.count("(SELECT address FROM ip_leases WHERE released_at IS NULL GROUP BY address HAVING count(*) > 1) twice"); n != 0 {
		t.Fatalf("%d addresses leased twice", n)
	}
	if n := e.count("ip_leases WHERE released_at IS NULL"); n != 30 {
		t.Fatalf("live leases = %d, want 30", n)
	}
	var spread []int
	rows, _ := e.db.Query(context.Background(), "SELECT count(*) FROM allocations WHERE released_at IS NULL GROUP BY host_id")
	for rows.Next() {
		var n int
		rows.Scan(&n)
		spread = append(spread, n)
	}
	if len(spread) != 3 {
		t.Fatalf("allocations per host = %v", spread)
	}
}
