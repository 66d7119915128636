package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/better-compute/vps/events"
)

// TestEventsPublishedOnce follows one instance through its life on the
// tenant's channel: every committed change arrives once, in order, with
// versions 1, 2, 3, … and the states PENDING → … → RUNNING → … → DELETED.
func TestEventsPublishedOnce(t *testing.T) {
	t.Parallel()
	c := start(t, options{hosts: 1, reconcilers: 1, hostVcpus: 10})
	opts, _ := redis.ParseURL(c.redisURL)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	sub := rdb.PSubscribe(context.Background(), "bc:events:*")
	defer sub.Close()
	if _, err := sub.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}

	id := c.create("vm", "RUNNING")
	var (
		seen   []events.InstanceEvent
		states []string
	)
	next := func(until string) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case msg := <-sub.Channel():
				var ev events.InstanceEvent
				if err := json.Unmarshal([]byte(msg.Payload), &ev); err != nil {
					t.Fatal(err)
				}
				if ev.Instance.ID != id {
					continue
				}
				if want := "bc:events:" + ev.Instance.TenantID; msg.Channel != want {
					t.Fatalf("published on %s, want %s", msg.Channel, want)
				}
				seen = append(seen, ev)
				if len(states) == 0 || states[len(states)-1] != ev.Instance.State {
					states = append(states, ev.Instance.State)
				}
				if ev.Instance.State == until && (until != "RUNNING" || ev.Instance.DesiredState == "RUNNING") {
					return
				}
			case <-timeout:
				t.Fatalf("no %s event; states so far %v", until, states)
			}
		}
	}
	next("RUNNING")
	c.set("stopInstance", id)
	next("STOPPED")
	c.set("deleteInstance", id)
	next("DELETED")

	for i, ev := range seen {
		if ev.Version != int64(i+1) || ev.Instance.Version != ev.Version {
			t.Fatalf("event %d has version %d: versions %v", i, ev.Version, versions(seen))
		}
	}
	if seen[0].Type != events.Created || seen[len(seen)-1].Type != events.Deleted {
		t.Fatalf("first %s, last %s", seen[0].Type, seen[len(seen)-1].Type)
	}
	want := []string{"PENDING", "PROVISIONING", "STARTING", "RUNNING", "STOPPING", "STOPPED", "DELETING", "DELETED"}
	if len(states) != len(want) {
		t.Fatalf("states %v, want %v", states, want)
	}
	for i := range want {
		if states[i] != want[i] {
			t.Fatalf("states %v, want %v", states, want)
		}
	}
	// Every event from placement until its deletion released it carries
	// the instance's one address, those of steps taken in one transaction
	// included; the deletion's carries none.
	for _, ev := range seen {
		want := 1
		switch ev.Instance.State {
		case "PENDING", "DELETED":
			want = 0
		}
		if len(ev.Instance.Addresses) != want {
			t.Fatalf("the %s event (version %d) has addresses %v, want %d", ev.Instance.State, ev.Version, ev.Instance.Addresses, want)
		}
	}
}

func versions(evs []events.InstanceEvent) []int64 {
	v := make([]int64, len(evs))
	for i, ev := range evs {
		v[i] = ev.Version
	}
	return v
}
