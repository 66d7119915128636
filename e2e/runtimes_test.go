package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/internal/vps"
)

// TestHostOfAnotherRuntime: a fake host adopted into a pool of runtime
// libvirt-kvm is refused by the gateway — its daemon logs the 400 naming
// both runtimes on every retry, serve logs the refusal once — is recorded
// as runtime fake, never counts as alive and gets nothing placed.
func TestHostOfAnotherRuntime(t *testing.T) {
	t.Parallel()
	c := start(t, options{hosts: 1, reconcilers: 1, hostVcpus: 4, poolRuntime: vps.RuntimeLibvirtKVM})
	id := c.create("vm", "RUNNING")
	const refusal = "runs runtime fake but its pool runs libvirt-kvm"
	testenv.Eventually(t, 30*time.Second, "the host daemon refused twice, naming both runtimes", func() bool {
		b, _ := os.ReadFile(c.hosts[0].log)
		return strings.Count(string(b), refusal) >= 2
	})
	b, _ := os.ReadFile(c.server.log)
	if n := strings.Count(string(b), "refused a host of another runtime"); n != 1 {
		t.Errorf("serve logged the refusal %d times, want once:\n%s", n, c.server.tail())
	}
	data, errs := c.gql(c.operator, `{ hosts { runtime alive } }`, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if h := data["hosts"].([]any)[0].(map[string]any); h["runtime"] != "fake" || h["alive"] != false {
		t.Errorf("the host is %v, want runtime fake and not alive", h)
	}
	inst, errs := c.gql(c.member, `query($id: ID!) { instance(id: $id) { state } }`, map[string]any{"id": id})
	if len(errs) > 0 || inst["instance"].(map[string]any)["state"] != "PENDING" {
		t.Errorf("the instance is %v %v, want PENDING: nothing is placed on a refused host", inst, errs)
	}
}
