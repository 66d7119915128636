package e2e

import (
	"context"
	"time"

	"testing"

	"github.com/better-compute/vps/internal/testenv"
)

// TestHostJoinsByCertificate: a host given only a join token joins over
// the TLS host listener, gets its certificate and serves an instance by
// certificate alone; it has no bearer credential.
func TestHostJoinsByCertificate(t *testing.T) {
	t.Parallel()
	c := start(t, options{certified: true, hosts: 1, reconcilers: 1, hostVcpus: 4})
	c.create("vm", "RUNNING")
	c.settle(60 * time.Second)
	if n := c.count("hosts WHERE credential_hash IS NULL AND cert_not_after > now()"); n != 1 {
		t.Fatalf("%d hosts without a bearer credential and with a live certificate, want 1", n)
	}
	if n := c.count("instances i JOIN hosts h ON h.id = i.host_id WHERE i.state = 'RUNNING' AND h.name = 'hv-0'"); n != 1 {
		t.Fatalf("%d instances RUNNING on hv-0, want 1", n)
	}
	data, _ := c.gql(c.operator, `{ hosts { name certified certValidBefore } }`, nil)
	h := data["hosts"].([]any)[0].(map[string]any)
	if h["certified"] != true || h["certValidBefore"] == nil {
		t.Fatalf("hv-0 as the API shows it: %v", h)
	}
	_ = testenv.Eventually
	_ = context.Background
}
