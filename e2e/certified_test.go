package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/internal/testenv"
)

// TestRequireCertifiedHosts runs a pool that requires certified hosts on
// real processes, its one host joined by certificate (valid 30 days): while
// the reconciler's margin (BC_CERTIFIED_MARGIN) is longer than that, an
// instance stays PENDING saying no certified host has room and naming the
// host; with the default margin it is placed and runs, certified until the
// host's certificate expires.
func TestRequireCertifiedHosts(t *testing.T) {
	t.Parallel()
	c := start(t, options{certified: true, hosts: 1, reconcilers: 1, hostVcpus: 4, reconcileEnv: []string{"BC_CERTIFIED_MARGIN=744h"}})
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
		return inst["state"] == "PENDING" && strings.HasPrefix(reason, "no certified host in pool fra1 has room") &&
			strings.Contains(reason, "valid for 744h0m0s more; not certified or expiring sooner: hv-0")
	})
	if inst := instance(); inst["hostCertified"] != false || inst["hostCertValidBefore"] != nil {
		t.Fatalf("a pending instance: %v", inst)
	}

	// The reconciler again, with the default margin of 24 hours.
	r := c.reconcs[0]
	r.stop()
	r.env = append(r.env, "BC_CERTIFIED_MARGIN=")
	r.start()
	testenv.Eventually(t, 30*time.Second, "the instance RUNNING on the certified host", func() bool {
		return instance()["state"] == "RUNNING"
	})
	var notAfter time.Time
	if err := c.db.QueryRow(t.Context(), "SELECT cert_not_after FROM hosts WHERE name = 'hv-0'").Scan(&notAfter); err != nil {
		t.Fatal(err)
	}
	inst := instance()
	until, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(inst["hostCertValidBefore"]))
	if inst["hostCertified"] != true || !until.Equal(notAfter) {
		t.Fatalf("the running instance: %v, want certified until %v", inst, notAfter)
	}
	if n := c.count("audit_events WHERE action = 'pool.setRequireCertifiedHosts' AND outcome = 'success'"); n != 1 {
		t.Errorf("%d audit rows of the policy, want 1", n)
	}
}

// TestCertifiedAfterRenewal: on real processes, a host that joined by
// certificate (12 s certificates, renewed at two thirds) runs a sandbox
// whose instance is certified until the host's certificate expires; a
// renewal moves the instance's validity to the new certificate's while it
// keeps running, and a snapshot records the validity of the certificate
// its host had when it was taken: one taken after the renewal the newer.
func TestCertifiedAfterRenewal(t *testing.T) {
	t.Parallel()
	c := sandboxCluster(t, options{certified: true, hosts: 1, reconcilers: 1, hostVcpus: 4, serverEnv: []string{"BC_HOST_CERT_VALIDITY=12s"}})
	tmpl := c.sandboxTemplate("attested", nil)
	sbx := c.createSandbox(tmpl, nil)
	testenv.Eventually(t, 30*time.Second, "the sandbox RUNNING", func() bool { return c.sandboxState(sbx.id) == "RUNNING" })

	// certification reads what the API says of a node's host certificate.
	certification := func(id string) (bool, time.Time) {
		t.Helper()
		data, errs := c.gql(c.member, `query($id: ID!) { node(id: $id) { ... on Instance { hostCertified hostCertValidBefore }
			... on SandboxSnapshot { hostCertified hostCertValidBefore } } }`, map[string]any{"id": id})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		n := data["node"].(map[string]any)
		var until time.Time
		if s, ok := n["hostCertValidBefore"].(string); ok {
			var err error
			if until, err = time.Parse(time.RFC3339Nano, s); err != nil {
				t.Fatal(err)
			}
		}
		return n["hostCertified"] == true, until
	}
	hostCert := func() time.Time {
		t.Helper()
		var at time.Time
		if err := c.db.QueryRow(t.Context(), "SELECT cert_not_after FROM hosts WHERE name = 'hv-0'").Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	issued := func(at time.Time) bool {
		return c.count("host_certificates WHERE not_after = $1 AND host_id = (SELECT id FROM hosts WHERE name = 'hv-0')", at) == 1
	}
	// current waits for the instance to be certified until its host's
	// newest certificate expires, and returns when that is.
	current := func(what string) time.Time {
		t.Helper()
		var until time.Time
		testenv.Eventually(t, 30*time.Second, what, func() bool {
			var ok bool
			ok, until = certification(sbx.instance)
			return ok && until.Equal(hostCert())
		})
		return until
	}
	// snapshotUntil takes a snapshot, waits for it READY and returns it
	// and until when it says its host was certified.
	snapshotUntil := func(name string) (string, time.Time) {
		t.Helper()
		id := c.takeSnapshot(sbx.id, name)
		if s := c.settledSnapshot(id, 30*time.Second); s.state != "READY" {
			t.Fatalf("snapshot %s: %+v", name, s)
		}
		ok, until := certification(id)
		if !ok || !issued(until) {
			t.Fatalf("snapshot %s: certified %v until %v, want certified until a certificate issued to hv-0", name, ok, until)
		}
		return id, until
	}

	first := current("the instance certified until its host's certificate expires")
	beforeID, before := snapshotUntil("before")
	if before.Before(first) {
		t.Fatalf("the first snapshot is certified until %v, before the instance was (%v)", before, first)
	}
	testenv.Eventually(t, 30*time.Second, "the host to renew its certificate", func() bool { return hostCert().After(before) })
	renewed := current("the instance certified until the renewed certificate expires")
	_, after := snapshotUntil("after")
	if !renewed.After(first) || after.Before(renewed) {
		t.Fatalf("validity: first %v, the snapshot before %v, renewed %v, the snapshot after %v", first, before, renewed, after)
	}
	if n := c.count("instances WHERE state <> 'RUNNING'"); n != 0 {
		t.Fatalf("%d instances not RUNNING across the renewal", n)
	}
	if ok, until := certification(beforeID); !ok || !until.Equal(before) {
		t.Fatalf("the first snapshot changed: certified %v until %v, want until %v", ok, until, before)
	}
}
