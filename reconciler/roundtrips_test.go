package reconciler_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/reconciler"
	"github.com/better-compute/vps/sqlc"
)

// TestStepReadsWithItsLock: an instance's steps from PENDING to RUNNING
// read its host's liveness and its addresses with its row lock, not in
// round trips of their own (HostLiveness, ListLiveLeases).
func TestStepReadsWithItsLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.host("hv-1", 4)
	id := e.create("vm")
	names := &testenv.Statements{}
	db := testenv.Traced(t, e.db, names)
	tune := func(c *reconciler.Config) { c.DB, c.HostSilentAfter = db, time.Hour }
	_, stop := e.start(tune, nil)

	e.eventually(10*time.Second, "the instance PROVISIONING", func() bool {
		return e.count("instances WHERE id = $1 AND state = 'PROVISIONING'", id) == 1
	})
	// The host's report, written with no reconciler running, so that no
	// step waits for its row lock (and then reads again, not fresh).
	stop()
	_, err := e.db.Exec(e.ctx, "UPDATE instances SET observed_state = 'running' WHERE id = $1", id)
	e.check(err)
	e.start(tune, nil)
	e.eventually(10*time.Second, "the instance RUNNING", func() bool {
		return e.count("instances WHERE id = $1 AND state = 'RUNNING' AND mac IS NOT NULL", id) == 1
	})
	for _, q := range []string{"HostLiveness", "ListLiveLeases"} {
		if n := names.Count(q); n != 0 {
			t.Errorf("%s ran %d times", q, n)
		}
	}
	if names.Count("LockInstanceStep") < 2 {
		t.Errorf("LockInstanceStep ran %d times, want 2 or more", names.Count("LockInstanceStep"))
	}
}

// TestLockInstanceStepAfterAWait: a row updated while LockInstanceStep
// waited for its lock comes back not fresh, since the host and leases read
// beside it are of the row before; read again, it is fresh, with them.
func TestLockInstanceStepAfterAWait(t *testing.T) {
	t.Parallel()
	e := setup(t)
	host := e.host("hv-1", 4)
	id := e.create("vm")
	arg := sqlc.LockInstanceStepParams{ID: id, SilentAfter: time.Hour.Seconds()}

	tx, err := e.db.Begin(e.ctx)
	e.check(err)
	defer tx.Rollback(e.ctx)
	_, err = tx.Exec(e.ctx, "UPDATE instances SET host_id = $2, version = version + 1 WHERE id = $1", id, host)
	e.check(err)
	_, err = tx.Exec(e.ctx, `INSERT INTO ip_leases (id, ip_pool_id, address, mac, instance_id)
		SELECT gen_random_uuid(), id, range_start, '02:bc:0a:c8:00:0a', $1 FROM ip_pools LIMIT 1`, id)
	e.check(err)
	type result struct {
		row sqlc.LockInstanceStepRow
		err error
	}
	waited := make(chan result, 1)
	go func() {
		row, err := sqlc.New(e.db).LockInstanceStep(e.ctx, arg)
		waited <- result{row, err}
	}()
	e.eventually(10*time.Second, "LockInstanceStep waiting for the row lock", func() bool {
		return e.count("pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '-- name: LockInstanceStep%'") == 1
	})
	e.check(tx.Commit(e.ctx))
	got := <-waited
	e.check(got.err)
	if got.row.Fresh || got.row.Instance.HostID == nil || *got.row.Instance.HostID != host {
		t.Fatalf("after the wait: fresh %v, host %v; want not fresh, the row as committed (host %v)", got.row.Fresh, got.row.Instance.HostID, host)
	}

	again, err := sqlc.New(e.db).LockInstanceStep(e.ctx, arg)
	e.check(err)
	if !again.Fresh || again.HostName != "hv-1" || !again.HostAlive || len(again.LeaseAddresses) != 1 || len(again.LeaseMacs) != 1 {
		t.Fatalf("read again: fresh %v, host %q alive %v, leases %v %v", again.Fresh, again.HostName, again.HostAlive, again.LeaseAddresses, again.LeaseMacs)
	}
}

// TestStepsEventsInOneStatement: a host's report that lets an instance go
// PROVISIONING → STARTING → RUNNING in one transaction writes the two
// steps' events in one statement (InsertOutboxes), not one each, and they
// are published in order.
func TestStepsEventsInOneStatement(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.host("hv-1", 4)
	id := e.create("vm")
	tune := func(c *reconciler.Config) { c.HostSilentAfter = time.Hour }
	_, stop := e.start(tune, nil)
	e.eventually(10*time.Second, "the instance PROVISIONING", func() bool {
		return e.count("instances WHERE id = $1 AND state = 'PROVISIONING'", id) == 1
	})
	stop()

	sub := e.rdb.Subscribe(context.Background(), e.prefix+events.TenantChannel(e.tenant))
	defer sub.Close()
	_, err := sub.Receive(context.Background())
	e.check(err)
	names := &testenv.Statements{}
	db := testenv.Traced(t, e.db, names)
	_, err = e.db.Exec(e.ctx, "UPDATE instances SET observed_state = 'running' WHERE id = $1", id)
	e.check(err)
	e.start(func(c *reconciler.Config) { tune(c); c.DB = db }, nil)

	var states []string
	deadline := time.After(10 * time.Second)
	for !slices.Contains(states, "RUNNING") {
		select {
		case msg := <-sub.Channel():
			p, err := events.Decode([]byte(msg.Payload))
			e.check(err)
			if p.Instance != nil {
				states = append(states, string(p.Instance.Instance.State))
			}
		case <-deadline:
			t.Fatalf("no RUNNING event; got %v", states)
		}
	}
	if want := []string{"STARTING", "RUNNING"}; !slices.Equal(states, want) {
		t.Errorf("events %v, want %v", states, want)
	}
	if n, m := names.Count("InsertOutbox"), names.Count("InsertOutboxes"); n != 0 || m != 1 {
		t.Errorf("the steps' events written by %d InsertOutbox and %d InsertOutboxes, want 0 and 1", n, m)
	}
}

// TestPlacementWrites: a placement leases the address in the statement
// that finds it, allocates on the host in the one that bumps the host's
// generation, and moves the instance in the statement that moves a batch,
// since each round trip holds the pool's lock longer.
func TestPlacementWrites(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.host("hv-1", 4)
	id := e.create("vm")
	names := &testenv.Statements{}
	db := testenv.Traced(t, e.db, names)
	e.start(func(c *reconciler.Config) { c.DB, c.HostSilentAfter = db, time.Hour }, nil)

	e.eventually(10*time.Second, "the instance PROVISIONING", func() bool {
		return e.count("instances WHERE id = $1 AND state = 'PROVISIONING'", id) == 1
	})
	for q, want := range map[string]int{"LockPool": 1, "LeaseNextAddresses": 1, "AllocateOnHosts": 1, "PlaceInstances": 1, "Transition": 0, "BumpHostGeneration": 0} {
		if n := names.Count(q); n != want {
			t.Errorf("%s ran %d times, want %d", q, n, want)
		}
	}
}
