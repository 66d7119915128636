package e2e

import (
	"testing"
	"time"

	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
)

// TestRollingUpgrade: a host daemon of protocol 1 (the fake runtime's
// --fake-protocol 1) is served through the real processes: a plain
// instance runs on it, while a sandbox's instance and a warm instance,
// which need protocol 2, wait PENDING until a host of version 2 joins, and
// then run there. The old host's instance keeps running throughout, and
// each host's version shows on the Host type.
func TestRollingUpgrade(t *testing.T) {
	t.Parallel()
	c := sandboxCluster(t, options{hosts: 1, reconcilers: 1, hostVcpus: 10, hostArgs: []string{"--fake-protocol", "1"}})
	plain := c.create("vm", "RUNNING")
	tmpl := c.sandboxTemplate("py", map[string]any{"warmCount": 1})
	sbx := c.createSandbox(tmpl, nil)
	sbxID, plainID := decode(t, ids.Instance, sbx.instance), decode(t, ids.Instance, plain)
	waiting := "state = 'PENDING' AND state_reason LIKE '%speaks host protocol 2 or later (older: hv-0)'"
	testenv.Eventually(t, 30*time.Second, "the plain instance RUNNING on hv-0, the sandbox's and the warm one PENDING for protocol 2", func() bool {
		return c.count("instances i JOIN hosts h ON h.id = i.host_id WHERE i.id = $1 AND i.state = 'RUNNING' AND h.name = 'hv-0'", plainID) == 1 &&
			c.count("instances WHERE id = $1 AND "+waiting, sbxID) == 1 && c.count("instances WHERE warm_template_id IS NOT NULL AND "+waiting) >= 1
	})

	cred := c.adopt("hv-new", 10)
	c.hosts = append(c.hosts, c.proc("host-new", []string{"BC_HOST_CREDENTIAL=" + cred},
		binary(t), "host", "--runtime", "fake", "--server", c.url, "--heartbeat", "500ms"))
	testenv.Eventually(t, 30*time.Second, "the sandbox RUNNING and the warm instance PAUSED on hv-new", func() bool {
		return c.sandboxState(sbx.id) == "RUNNING" && c.warm(tmpl, "PAUSED", true) == 1 &&
			c.count("instances i JOIN hosts h ON h.id = i.host_id WHERE i.id = $1 AND h.name = 'hv-new'", sbxID) == 1
	})
	if n := c.count("instances i JOIN hosts h ON h.id = i.host_id WHERE h.name = 'hv-0' AND (i.sandbox_id IS NOT NULL OR i.warm_template_id IS NOT NULL)"); n != 0 {
		t.Fatalf("%d instances needing protocol 2 on hv-0", n)
	}
	if n := c.count("instances WHERE id = $1 AND state = 'RUNNING'", plainID); n != 1 {
		t.Fatal("the old host's instance is no longer RUNNING")
	}
	data, errs := c.gql(c.operator, `{ hosts { name protocolVersion } }`, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	got := map[string]float64{}
	for _, h := range data["hosts"].([]any) {
		h := h.(map[string]any)
		got[h["name"].(string)], _ = h["protocolVersion"].(float64)
	}
	if got["hv-0"] != 1 || got["hv-new"] != hostproto.Version {
		t.Fatalf("host protocol versions %v, want hv-0 1 and hv-new %d", got, hostproto.Version)
	}
}
