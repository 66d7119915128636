package e2e

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"
)

// churn runs the design document's acceptance shape: n instances created,
// stopped, started and deleted in random interleavings; during is called
// in the middle of it. Every instance must reach its desired state, and
// nothing may be left held at the end.
func churn(t *testing.T, c *cluster, n int, during func()) {
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	run := func(f func()) {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			f()
		})
	}
	for i := range n {
		desired := "RUNNING"
		if rng.IntN(4) == 0 {
			desired = "STOPPED"
		}
		run(func() { ids[i] = c.create(fmt.Sprintf("vm-%03d", i), desired) })
	}
	wg.Wait()
	ops := []string{"stopInstance", "startInstance"}
	for round := range 3 {
		for range n {
			id, op := ids[rng.IntN(n)], ops[rng.IntN(2)]
			run(func() { c.set(op, id) })
		}
		if round == 1 && during != nil {
			during()
		}
		if round == 1 {
			wg.Wait()
			t.Logf("settled mid-churn in %v", c.settle(90*time.Second))
		}
	}
	// Delete every instance, some while changes are still in flight.
	for _, i := range rng.Perm(n) {
		id, op := ids[i], ""
		if rng.IntN(3) == 0 {
			op = ops[rng.IntN(2)]
		}
		run(func() {
			if op != "" {
				c.set(op, id)
			}
			c.set("deleteInstance", id)
		})
	}
	wg.Wait()
	t.Logf("all deleted in %v", c.settle(90*time.Second))
	c.noLeaks()
}

func TestChurn(t *testing.T) {
	t.Parallel()
	c := start(t, options{hosts: 3, reconcilers: 1, hostVcpus: 100})
	churn(t, c, 200, nil)
}

// TestChurnWithReconcilerKilled churns with two reconcilers, one of which
// is killed with SIGKILL mid-churn and restarted.
func TestChurnWithReconcilerKilled(t *testing.T) {
	t.Parallel()
	c := start(t, options{hosts: 3, reconcilers: 2, hostVcpus: 100})
	churn(t, c, 200, func() {
		c.reconcs[0].signal(syscall.SIGKILL)
		t.Log("killed reconcile-0")
		time.AfterFunc(2*time.Second, func() { c.reconcs[0].start(); t.Log("restarted reconcile-0") })
	})
}

// TestRedisFlushed loses Redis's data mid-run: every instance still
// converges, from the rescan of Postgres.
func TestRedisFlushed(t *testing.T) {
	t.Parallel()
	c := start(t, options{hosts: 3, reconcilers: 1, hostVcpus: 100})
	churn(t, c, 100, func() {
		c.flushRedis()
		t.Log("flushed Redis")
	})
}
