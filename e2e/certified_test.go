package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/internal/testenv"
)

// TestRequireCertifiedHosts runs a pool that requires certified hosts on
// real processes: an instance stays PENDING with the reason while its one
// host has no certificate, is placed once the host's certificate outlives
// the margin, and is then recorded as its host's reports say — here the
// bearer credential, so not certified.
func TestRequireCertifiedHosts(t *testing.T) {
	t.Parallel()
	c := start(t, options{hosts: 1, reconcilers: 1, hostVcpus: 4})
	c.must(c.operator, `mutation($p: ID!) { setPoolRequireCertifiedHosts(input: {poolId: $p, requireCertifiedHosts: true}) { pool { id } } }`,
		map[string]any{"p": c.pool})
	id := c.create("vm", "RUNNING")
	instance := func() map[string]any {
		t.Helper()
		data, errs := c.gql(c.member, `query($id: ID!) { instance(id: $id) { state stateReason hostCertified hostCertValidBefore } }`, map[string]any{"id": id})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return data["instance"].(map[string]any)
	}

	testenv.Eventually(t, 30*time.Second, "the instance PENDING, saying no certified host has room", func() bool {
		inst := instance()
		reason, _ := inst["stateReason"].(string)
		return inst["state"] == "PENDING" && strings.HasPrefix(reason, "no certified host in pool fra1 has room") && strings.Contains(reason, "hv-0")
	})
	if inst := instance(); inst["hostCertified"] != false || inst["hostCertValidBefore"] != nil {
		t.Fatalf("a pending instance: %v", inst)
	}

	// The host's certificate, as the gateway records it when it issues one.
	if _, err := c.db.Exec(t.Context(), "UPDATE hosts SET cert_not_after = now() + interval '30 days' WHERE name = 'hv-0'"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the instance RUNNING on the certified host", func() bool {
		return instance()["state"] == "RUNNING"
	})
	if n := c.count("audit_events WHERE action = 'pool.setRequireCertifiedHosts' AND outcome = 'success'"); n != 1 {
		t.Errorf("%d audit rows of the policy, want 1", n)
	}
	// The host reports with its bearer credential: its instance is not
	// certified, whatever the host's newest certificate says.
	if inst := instance(); inst["hostCertified"] != false || inst["hostCertValidBefore"] != nil {
		t.Fatalf("an instance on a host reporting by bearer credential: %v", inst)
	}
}
