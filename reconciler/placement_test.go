package reconciler_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
	"github.com/better-compute/vps/reconciler"
	"github.com/better-compute/vps/sqlc"
	"github.com/google/uuid"
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
	if n := e.count(usageMismatches); n != 0 {
		t.Fatalf("%d host usage rows differ from the live allocations", n)
	}
	if n := e.count("(SELECT address FROM ip_leases WHERE released_at IS NULL GROUP BY address HAVING count(*) > 1) twice"); n != 0 {
		t.Fatalf("%d addresses leased twice", n)
	}
	if n := e.count("ip_leases WHERE released_at IS NULL"); n != 30 {
		t.Fatalf("live leases = %d, want 30", n)
	}
	// Each MAC is its address's: 02:bc: and the four octets.
	leases, err := e.db.Query(e.ctx, "SELECT address, mac FROM ip_leases")
	e.check(err)
	for leases.Next() {
		var (
			addr netip.Addr
			mac  string
		)
		e.check(leases.Scan(&addr, &mac))
		b := addr.As4()
		if want := fmt.Sprintf("02:bc:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3]); mac != want {
			t.Errorf("%s leased with MAC %s, want %s", addr, mac, want)
		}
	}
	e.check(leases.Err())
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

// TestNoIPRange: an instance of a hosted pool without an IP range is not
// placed without an address — it stays PENDING with a reason, holding
// nothing — and is placed, with an address, once an operator adds a range.
func TestNoIPRange(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p, err := e.svc.CreatePool(e.ctx, control.PoolInput{Name: "bare", Class: vps.ClassHosted})
	e.check(err)
	e.pool = p.ID
	e.host("hv-1", 4)
	id := e.create("vm")
	e.reconcilers(1, func(c *reconciler.Config) { c.HostSilentAfter = time.Hour })

	e.eventually(10*time.Second, "the instance PENDING with the reason", func() bool {
		return e.count("instances WHERE id = $1 AND state = 'PENDING' AND state_reason = 'pool bare has no IP range to give an address: an operator must add one (createIpPool)'", id) == 1
	})
	if n := e.count("allocations WHERE instance_id = $1", id); n != 0 {
		t.Fatalf("the waiting instance holds %d allocations", n)
	}

	e.ranged(p.ID)
	e.eventually(10*time.Second, "the instance placed once the pool has a range", func() bool {
		return e.count("instances WHERE id = $1 AND state = 'PROVISIONING'", id) == 1
	})
	if n := e.count("ip_leases WHERE instance_id = $1 AND released_at IS NULL", id); n != 1 {
		t.Fatalf("the placed instance holds %d leases, want 1", n)
	}
}

// TestAddressGaps: placement leases the address after the highest leased
// one, and once the range is leased up to its end, the free ones below;
// with none free, the instance waits with the reason.
func TestAddressGaps(t *testing.T) {
	t.Parallel()
	e := setup(t)
	holder := e.create("holder") // of the first pool, which has no host
	p, err := e.svc.CreatePool(e.ctx, control.PoolInput{Name: "small", Class: vps.ClassHosted})
	e.check(err)
	e.pool = p.ID
	ipPool, err := e.svc.CreateIPPool(e.ctx, control.IPPoolInput{PoolID: p.ID, CIDR: "10.201.0.0/24", Gateway: "10.201.0.1", RangeStart: "10.201.0.10", RangeEnd: "10.201.0.13"})
	e.check(err)
	// Someone holds the range's end: the next address is past it, so the
	// three below are found as gaps.
	_, err = e.db.Exec(e.ctx, "INSERT INTO ip_leases (id, ip_pool_id, address, mac, instance_id) VALUES ($1, $2, '10.201.0.13', '02:bc:0a:c9:00:0d', $3)",
		ids.New(), ipPool.ID, holder)
	e.check(err)
	e.host("hv-1", 10)
	for i := range 4 {
		e.create(fmt.Sprintf("vm-%d", i))
	}
	e.reconcilers(1, func(c *reconciler.Config) { c.HostSilentAfter = time.Hour })

	e.eventually(10*time.Second, "three placed and one waiting for an address", func() bool {
		return e.count("instances WHERE state = 'PROVISIONING'") == 3 &&
			e.count("instances WHERE state = 'PENDING' AND state_reason = 'no free address in pool small'") == 1
	})
	if n := e.count(`ip_leases WHERE released_at IS NULL AND (address, mac) IN
		(('10.201.0.10', '02:bc:0a:c9:00:0a'), ('10.201.0.11', '02:bc:0a:c9:00:0b'), ('10.201.0.12', '02:bc:0a:c9:00:0c'))`); n != 3 {
		t.Fatalf("%d of the gaps leased with their address's MAC, want 3", n)
	}
}

// TestBatchLeasesStopAtRangeEnd: a batch leases past its first range's
// end no address; the instances it has no room for are placed in the next
// range, every address inside its range and leased once.
func TestBatchLeasesStopAtRangeEnd(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p, err := e.svc.CreatePool(e.ctx, control.PoolInput{Name: "ranges", Class: vps.ClassHosted})
	e.check(err)
	e.pool = p.ID
	for _, r := range []control.IPPoolInput{
		{PoolID: p.ID, CIDR: "10.202.0.0/24", Gateway: "10.202.0.1", RangeStart: "10.202.0.10", RangeEnd: "10.202.0.13"},
		{PoolID: p.ID, CIDR: "10.202.1.0/24", Gateway: "10.202.1.1", RangeStart: "10.202.1.10", RangeEnd: "10.202.1.50"},
	} {
		_, err := e.svc.CreateIPPool(e.ctx, r)
		e.check(err)
	}
	e.host("hv-1", 100)
	const n = 10
	for i := range n {
		e.create(fmt.Sprintf("vm-%d", i))
	}
	e.reconcilers(1, func(c *reconciler.Config) { c.HostSilentAfter = time.Hour })
	e.eventually(10*time.Second, "all placed", func() bool {
		return e.count("instances WHERE state = 'PROVISIONING'") == n
	})
	for what, q := range map[string]string{
		"leases inside their range":  "ip_leases l JOIN ip_pools r ON r.id = l.ip_pool_id WHERE l.released_at IS NULL AND l.address BETWEEN r.range_start AND r.range_end",
		"distinct addresses":         "(SELECT DISTINCT address FROM ip_leases WHERE released_at IS NULL) a",
		"leases with their MAC":      "ip_leases WHERE released_at IS NULL AND mac = mac_for(address)",
		"instances with their lease": "instances i JOIN ip_leases l ON l.instance_id = i.id AND l.released_at IS NULL AND l.mac = i.mac",
	} {
		if k := e.count(q); k != n {
			t.Errorf("%s = %d, want %d", what, k, n)
		}
	}
	if k := e.count("ip_leases WHERE released_at IS NULL AND address <<= '10.202.0.0/24'"); k != 4 {
		t.Errorf("%d leases in the first range, want its 4 addresses", k)
	}
}

// TestPlacementBatch: one hold of a pool's lock places many pending
// instances, each with its allocation, address and event, none twice, and
// spread over the hosts as one at a time would.
func TestPlacementBatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for i := range 2 {
		e.host(fmt.Sprintf("hv-%d", i), 100)
	}
	const n = 40
	var created []uuid.UUID
	for i := range n {
		created = append(created, e.create(fmt.Sprintf("vm-%d", i)))
	}
	// One kept its lease from an earlier placement (a recreate does): it is
	// placed with it, not given a second by a batch.
	q := sqlc.New(e.db)
	kept, err := q.LeaseNextAddresses(e.ctx, sqlc.LeaseNextAddressesParams{PoolID: e.pool, Ids: []uuid.UUID{ids.New()}, InstanceIds: created[n/2 : n/2+1]})
	e.check(err)
	_, err = e.db.Exec(e.ctx, "UPDATE instances SET mac = $1 WHERE id = $2", kept[0].Mac, kept[0].InstanceID)
	e.check(err)
	sub := e.rdb.Subscribe(context.Background(), e.prefix+events.TenantChannel(e.tenant))
	defer sub.Close()
	_, err = sub.Receive(context.Background())
	e.check(err)
	names := &testenv.Statements{}
	db := testenv.Traced(t, e.db, names)
	e.start(func(c *reconciler.Config) { c.DB, c.HostSilentAfter = db, time.Hour }, nil)

	provisioning := map[string]int{}
	deadline := time.After(20 * time.Second)
	for len(provisioning) < n {
		select {
		case msg := <-sub.Channel():
			p, err := events.Decode([]byte(msg.Payload))
			e.check(err)
			if p.Instance != nil && p.Instance.Instance.State == "PROVISIONING" {
				provisioning[p.Instance.Instance.ID]++
			}
		case <-deadline:
			t.Fatalf("PROVISIONING events for %d of %d instances", len(provisioning), n)
		}
	}
	for id, k := range provisioning {
		if k != 1 {
			t.Errorf("%s: %d PROVISIONING events", id, k)
		}
	}
	// Every placement but the first few (the workers that took an instance
	// before the first hold claimed the rest) was made beside another.
	holds := names.Count("LockPool")
	if holds > n/2 {
		t.Errorf("%d pool locks for %d placements, want them placed in batches", holds, n)
	}
	// A hold's writes are a few statements, however many it places: the
	// placing instance's lease, and the batch's leases, allocations and
	// moves, each in one.
	for _, q := range []string{"LeaseNextAddresses", "AllocateOnHosts", "PlaceInstances"} {
		if k := names.Count(q); k > 2*holds {
			t.Errorf("%s ran %d times in %d holds of the pool's lock, want at most %d", q, k, holds, 2*holds)
		}
	}
	for what, q := range map[string]string{
		"live allocations":        "allocations WHERE released_at IS NULL",
		"live leases":             "ip_leases WHERE released_at IS NULL",
		"addresses":               "(SELECT DISTINCT address FROM ip_leases WHERE released_at IS NULL) a",
		"instances with a host":   "instances WHERE state = 'PROVISIONING' AND host_id IS NOT NULL AND mac IS NOT NULL",
		"history rows of placing": "instance_state_history WHERE from_state = 'PENDING' AND to_state = 'PROVISIONING'",
	} {
		if k := e.count(q); k != n {
			t.Errorf("%s = %d, want %d", what, k, n)
		}
	}
	if k := e.count("ip_leases WHERE id = $1 AND released_at IS NULL", kept[0].ID); k != 1 {
		t.Errorf("the kept lease is live %d times, want 1", k)
	}
	if k := e.count("instances i JOIN ip_leases l ON l.instance_id = i.id AND l.released_at IS NULL AND l.mac = i.mac"); k != n {
		t.Errorf("%d instances have a live lease with their MAC, want %d (one each)", k, n)
	}
	if k := e.count(usageMismatches); k != 0 {
		t.Errorf("%d host usage rows differ from the live allocations", k)
	}
	// Spread holds within a batch: the two hosts share the instances.
	for host, k := range e.perHost() {
		if k != n/2 {
			t.Errorf("%s has %d instances, want %d", host, k, n/2)
		}
	}
}

// TestWakeHostsOnce: a host named several times by one commit's steps (a
// batch of placements names it per instance) is woken once.
func TestWakeHostsOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	h1, h2 := e.host("hv-1", 4), e.host("hv-2", 4)
	r, _ := e.start(nil, nil)
	sub := e.rdb.Subscribe(context.Background(), e.prefix+events.HostChannel(h1), e.prefix+events.HostChannel(h2))
	defer sub.Close()
	for range 2 {
		_, err := sub.Receive(context.Background())
		e.check(err)
	}
	r.WakeHosts(e.ctx, []uuid.UUID{h1, h1, h2, h1})
	// The last message, published after the wakes were answered.
	e.check(e.rdb.Publish(e.ctx, e.prefix+events.HostChannel(h2), "end").Err())
	got := map[string]int{}
	for {
		msg, err := sub.ReceiveMessage(e.ctx)
		e.check(err)
		if msg.Payload == "end" {
			break
		}
		got[msg.Channel]++
	}
	for _, h := range []uuid.UUID{h1, h2} {
		if n := got[e.prefix+events.HostChannel(h)]; n != 1 {
			t.Errorf("host %s woken %d times, want 1", h, n)
		}
	}
}
