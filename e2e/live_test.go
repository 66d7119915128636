package e2e

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/better-compute/vps/internal/testenv"
)

// TestSubscriptionLifecycle sees each state of an instance's life, in
// order, with increasing versions, from CREATED to DELETED.
func TestSubscriptionLifecycle(t *testing.T) {
	t.Parallel()
	c := start(t, options{hosts: 1, reconcilers: 1, hostVcpus: 10})
	ws := subscribe(t, c.url, c.member, nil)
	id := c.create("vm", "RUNNING")
	waitState := func(state string) {
		t.Helper()
		ws.converges(t, 20*time.Second, func() map[string]string {
			if v := ws.view()[id]; len(v) >= len(state) && v[:len(state)] == state {
				return ws.view()
			}
			return map[string]string{id: state}
		})
	}
	waitState("RUNNING")
	c.set("stopInstance", id)
	waitState("STOPPED")
	c.set("deleteInstance", id)
	waitState("DELETED")

	ws.mu.Lock()
	defer ws.mu.Unlock()
	var states []string
	for i, ev := range ws.events {
		if ev.Version != i+1 {
			t.Fatalf("event %d has version %d", i, ev.Version)
		}
		if len(states) == 0 || states[len(states)-1] != ev.Instance.State {
			states = append(states, ev.Instance.State)
		}
	}
	want := "[PENDING PROVISIONING STARTING RUNNING STOPPING STOPPED DELETING DELETED]"
	if fmt.Sprint(states) != want || ws.events[0].Type != "CREATED" || ws.events[len(ws.events)-1].Type != "DELETED" {
		t.Fatalf("states %v (want %s), first %s, last %s", states, want, ws.events[0].Type, ws.events[len(ws.events)-1].Type)
	}
}

// toggler changes a tenant's instances at random until stopped, or until
// the test ends: its goroutine never outlives the test.
type toggler struct {
	done    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
	changes atomic.Int64
}

func toggle(t testing.TB, c *cluster, token string, ids []string) *toggler {
	tg := &toggler{done: make(chan struct{})}
	t.Cleanup(tg.stop)
	tg.wg.Go(func() {
		rng := rand.New(rand.NewPCG(2, uint64(time.Now().UnixNano())))
		for {
			select {
			case <-tg.done:
				return
			default:
			}
			op := []string{"stopInstance", "startInstance"}[rng.IntN(2)]
			c.gql(token, `mutation($id: ID!) { `+op+`(input: {id: $id}) { instance { id } } }`, map[string]any{"id": ids[rng.IntN(len(ids))]})
			tg.changes.Add(1)
		}
	})
	return tg
}

func (tg *toggler) stop() { tg.once.Do(func() { close(tg.done); tg.wg.Wait() }) }

// made waits until n more changes were made than when it was called.
func (tg *toggler) made(t testing.TB, n int64) {
	t.Helper()
	want := tg.changes.Load() + n
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("%d changes", n), func() bool { return tg.changes.Load() >= want })
}

// TestIncludeCurrent subscribes with includeCurrent while instances change
// concurrently: the client's final view equals the database's.
func TestIncludeCurrent(t *testing.T) {
	t.Parallel()
	c := start(t, options{hosts: 2, reconcilers: 1, hostVcpus: 50})
	var ids []string
	for i := range 30 {
		ids = append(ids, c.create(fmt.Sprintf("vm-%d", i), "RUNNING"))
	}
	churn := toggle(t, c, c.member, ids)
	churn.made(t, 20) // subscribe mid-churn
	ws := subscribe(t, c.url, c.member, map[string]any{"c": true})
	churn.made(t, 50)
	churn.stop()
	c.settle(30 * time.Second)
	ws.converges(t, 20*time.Second, func() map[string]string { return c.dbView(t, false) })
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if !ws.events[0].Snapshot {
		t.Fatal("the first event is not from the snapshot")
	}
}

// TestTenantIsolation churns two tenants: a member's subscription never
// receives the other tenant's events; an operator's receives both.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	c := start(t, options{hosts: 2, reconcilers: 1, hostVcpus: 50})
	other, otherToken := c.addTenant("globex")
	mine := subscribe(t, c.url, c.member, nil)
	ops := subscribe(t, c.url, c.operator, nil)
	var acme, globex []string
	for i := range 10 {
		acme = append(acme, c.create(fmt.Sprintf("a-%d", i), "RUNNING"))
		globex = append(globex, c.must(otherToken, `mutation($in: CreateInstanceInput!) { createInstance(input: $in) { instance { id } } }`,
			map[string]any{"in": map[string]any{"poolId": c.pool, "flavorId": c.flavor, "imageId": c.image, "name": fmt.Sprintf("g-%d", i), "sshKeys": []string{sshKey}}},
			"createInstance", "instance", "id"))
	}
	churnAcme := toggle(t, c, c.member, acme)
	churnGlobex := toggle(t, c, otherToken, globex)
	churnAcme.made(t, 50)
	churnGlobex.made(t, 50)
	churnAcme.stop()
	churnGlobex.stop()
	c.settle(30 * time.Second)
	mine.converges(t, 20*time.Second, func() map[string]string { return c.dbView(t, false) })
	ops.converges(t, 20*time.Second, func() map[string]string {
		if len(ops.view()) == 20 {
			return ops.view()
		}
		return map[string]string{"all 20 instances": ""}
	})
	mine.mu.Lock()
	defer mine.mu.Unlock()
	for _, ev := range mine.events {
		if ev.Instance.Tenant.ID == other {
			t.Fatalf("a member received another tenant's event: %+v", ev)
		}
	}
}

// TestTwoServers: a change made through one serve process reaches a
// subscriber of another.
func TestTwoServers(t *testing.T) {
	t.Parallel()
	c := start(t, options{serves: 2, hosts: 1, reconcilers: 1, hostVcpus: 10})
	ws := subscribe(t, c.urls[1], c.member, nil)
	id := c.create("vm", "RUNNING")
	c.settle(20 * time.Second)
	ws.converges(t, 20*time.Second, func() map[string]string { return c.dbView(t, false) })
	if ws.view()[id] == "" {
		t.Fatal("no event for the instance")
	}
}

// TestRedisRestarted kills Redis mid-stream and starts it again:
// subscribers end with the true final state.
func TestRedisRestarted(t *testing.T) {
	t.Parallel()
	c := start(t, options{hosts: 2, reconcilers: 1, hostVcpus: 50})
	var ids []string
	for i := range 10 {
		ids = append(ids, c.create(fmt.Sprintf("vm-%d", i), "RUNNING"))
	}
	ws := subscribe(t, c.url, c.member, map[string]any{"c": true})
	c.settle(20 * time.Second)
	c.redis.signal(syscall.SIGKILL)
	for _, id := range ids[:5] {
		c.set("stopInstance", id) // recorded in Postgres; Redis is down
	}
	c.set("deleteInstance", ids[9])
	c.redis.start()
	c.settle(60 * time.Second)
	ws.converges(t, 60*time.Second, func() map[string]string { return c.dbView(t, true) })
	if n := metric(t, c.url, "bc_live_resyncs_total"); n < 1 {
		t.Fatalf("resyncs = %v: the hub did not notice the drop", n)
	}
}

// TestSlowClient: a subscriber that never reads is closed; the others still
// receive every event.
func TestSlowClient(t *testing.T) {
	t.Parallel()
	// The server gives up on a client with more than 32 KiB unread, however
	// much the kernels on the way would buffer.
	c := start(t, options{hosts: 2, reconcilers: 1, hostVcpus: 100, serverEnv: []string{"BC_LIVE_BUFFER=64", "BC_LIVE_MAX_UNREAD=32768"}})
	slow := dialSlow(t, c.url, c.member)
	ws := subscribe(t, c.url, c.member, nil)
	var ids []string
	for i := range 50 {
		ids = append(ids, c.create(fmt.Sprintf("vm-%d", i), "RUNNING"))
	}
	churn := toggle(t, c, c.member, ids)
	testenv.Eventually(t, 60*time.Second, "the slow client to be dropped", func() bool {
		return metric(t, c.url, "bc_live_slow_subscribers_total") >= 1
	})
	// It reads at last: what it was sent, then the slow-consumer close.
	if !slow.closedWithin(20 * time.Second) {
		t.Fatal("the slow client was not closed with the slow-consumer reason")
	}
	churn.stop()
	c.settle(30 * time.Second)
	ws.converges(t, 20*time.Second, func() map[string]string { return c.dbView(t, false) })
	if n := metric(t, c.url, "bc_live_slow_subscribers_total"); n != 1 {
		t.Fatalf("slow subscribers = %v, want only the slow one", n)
	}
}
