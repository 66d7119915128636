package e2e

import (
	"syscall"
	"testing"
	"time"

	"github.com/better-compute/vps/internal/testenv"
)

// TestSilentHost freezes a host process: its instances go LOST once it is
// silent past the timeout, and return to RUNNING when it reports again.
func TestSilentHost(t *testing.T) {
	t.Parallel()
	c := start(t, options{hosts: 2, reconcilers: 1, hostVcpus: 10})
	for i := range 6 {
		c.create("vm-"+string(rune('a'+i)), "RUNNING")
	}
	c.settle(30 * time.Second)
	frozen := c.hosts[0]
	var host string
	c.db.QueryRow(t.Context(), "SELECT id FROM hosts WHERE name = 'hv-0'").Scan(&host)
	on := c.count("instances WHERE host_id = $1", host)
	if on == 0 {
		t.Fatal("no instance on hv-0 to lose")
	}

	hosts := func() map[string]map[string]any {
		data, errs := c.gql(c.operator, `{ hosts { name alive lastSeenAt allocated { instances vcpus memoryMb } capacity { vcpus } } pools { name ipPools { size leased } } }`, nil)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		out := map[string]map[string]any{}
		for _, h := range data["hosts"].([]any) {
			out[h.(map[string]any)["name"].(string)] = h.(map[string]any)
		}
		if leased := data["pools"].([]any)[0].(map[string]any)["ipPools"].([]any)[0].(map[string]any)["leased"].(float64); leased != 6 {
			t.Fatalf("pool shows %v addresses leased, want 6", leased)
		}
		return out
	}
	view := hosts()["hv-0"]
	if view["alive"] != true || view["lastSeenAt"] == nil || view["allocated"].(map[string]any)["instances"].(float64) != float64(on) ||
		view["allocated"].(map[string]any)["vcpus"].(float64) != float64(on) {
		t.Fatalf("operator view of hv-0: %v", view)
	}

	frozen.signal(syscall.SIGSTOP)
	testenv.Eventually(t, 30*time.Second, "instances of the frozen host LOST", func() bool {
		return c.count("instances WHERE host_id = $1 AND state = 'LOST' AND state_reason = 'host hv-0 stopped reporting'", host) == on
	})
	if n := c.count("instances WHERE host_id <> $1 AND state = 'RUNNING'", host); n != 6-on {
		t.Fatalf("%d instances on the live host running, want %d", n, 6-on)
	}
	if view := hosts(); view["hv-0"]["alive"] != false || view["hv-1"]["alive"] != true {
		t.Fatalf("liveness: hv-0 %v, hv-1 %v", view["hv-0"]["alive"], view["hv-1"]["alive"])
	}
	frozen.signal(syscall.SIGCONT)
	testenv.Eventually(t, 30*time.Second, "instances back to RUNNING", func() bool {
		return c.count("instances WHERE host_id = $1 AND state = 'RUNNING'", host) == on
	})
}

// TestHostCannotStart gives one host a hypervisor that fails every start:
// instances placed there recreate on the other host and run.
func TestHostCannotStart(t *testing.T) {
	t.Parallel()
	c := start(t, options{hosts: 1, reconcilers: 1, hostVcpus: 10, hostArgs: []string{"--fake-fail-starts", "no KVM here"}})
	c.create("vm", "RUNNING")
	testenv.Eventually(t, 30*time.Second, "the instance to be given up on hv-0", func() bool {
		return c.count("instances WHERE state = 'PENDING' AND avoid_host_id IS NOT NULL AND state_reason LIKE '%host hv-0 could not start it%'") == 1
	})
	healthy := c.adopt("hv-good", 10)
	c.hosts = append(c.hosts, c.proc("host-good", []string{"BC_HOST_CREDENTIAL=" + healthy},
		binary(t), "host", "--runtime", "fake", "--server", c.url, "--heartbeat", "500ms"))
	c.settle(30 * time.Second)
	var host string
	c.db.QueryRow(t.Context(), "SELECT h.name FROM instances i JOIN hosts h ON h.id = i.host_id WHERE i.state = 'RUNNING'").Scan(&host)
	if host != "hv-good" {
		t.Fatalf("instance runs on %q, want hv-good", host)
	}
	if n := c.count("allocations WHERE released_at IS NULL"); n != 1 {
		t.Fatalf("live allocations = %d, want 1", n)
	}
	if n := c.count("ip_leases"); n != 1 {
		t.Fatalf("leases = %d: the address should be kept across the recreate", n)
	}
}
