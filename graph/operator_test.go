package graph_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/better-compute/vps/ids"
)

func TestOperatorSetup(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tenant, _ := e.tenant("acme")
	pool := e.pool("fra1", "vps-host", nil)

	t.Run("IP pool", func(t *testing.T) {
		var out struct {
			CreateIpPool struct {
				Pool struct {
					IpPools []struct {
						Cidr, Gateway, RangeStart, RangeEnd string
						DNS                                 []string
						Size, Leased                        int
					}
				}
			}
		}
		e.must(e.operator, `mutation($p: ID!) { createIpPool(input: {poolId: $p, cidr: "10.20.0.0/24", gateway: "10.20.0.1", rangeStart: "10.20.0.10", rangeEnd: "10.20.0.209", dns: ["1.1.1.1"]}) {
			pool { ipPools { cidr gateway rangeStart rangeEnd dns size leased } } } }`, map[string]any{"p": pool}, &out)
		ipp := out.CreateIpPool.Pool.IpPools
		if len(ipp) != 1 || ipp[0].Size != 200 || ipp[0].Leased != 0 || ipp[0].Cidr != "10.20.0.0/24" || ipp[0].DNS[0] != "1.1.1.1" {
			t.Fatalf("ipPools = %+v", ipp)
		}
		for _, bad := range []struct{ cidr, gw, start, end, field string }{
			{"10.20.0.0/33", "10.20.0.1", "10.20.0.10", "10.20.0.20", "cidr"},
			{"10.20.0.1/24", "10.20.0.1", "10.20.0.10", "10.20.0.20", "cidr"},
			{"10.20.0.0/24", "10.21.0.1", "10.20.0.10", "10.20.0.20", "gateway"},
			{"10.20.0.0/24", "10.20.0.1", "10.20.0.30", "10.20.0.20", "rangeEnd"},
			{"10.20.0.0/24", "10.20.0.15", "10.20.0.10", "10.20.0.20", "gateway"},
			// At most 65536 addresses in one range.
			{"10.0.0.0/8", "10.0.0.1", "10.0.0.10", "10.1.0.10", "rangeEnd"},
		} {
			r := e.do(e.operator, `mutation($p: ID!, $c: String!, $g: String!, $s: String!, $e: String!) { createIpPool(input: {poolId: $p, cidr: $c, gateway: $g, rangeStart: $s, rangeEnd: $e}) { pool { id } } }`,
				map[string]any{"p": pool, "c": bad.cidr, "g": bad.gw, "s": bad.start, "e": bad.end})
			if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != bad.field {
				t.Errorf("%+v: %+v", bad, r.Errors)
			}
		}
	})
	t.Run("host adoption and capacity", func(t *testing.T) {
		var created struct {
			CreateHost struct {
				Credential string
				Host       struct{ ID string }
			}
		}
		e.must(e.operator, `mutation($p: ID!) { createHost(input: {poolId: $p, name: "hv-1"}) { credential host { id } } }`, map[string]any{"p": pool}, &created)
		cred := created.CreateHost.Credential
		if !strings.HasPrefix(cred, "bch_") || len(cred) < 40 {
			t.Fatalf("credential = %q", cred)
		}
		if n := e.count("hosts", "position(convert_to($1, 'UTF8') in credential_hash) > 0", cred); n != 0 {
			t.Fatal("the credential is stored in the clear")
		}
		var out struct {
			Hosts []struct {
				Name     string
				Capacity struct{ Vcpus, MemoryMb, DiskGb int }
				Gpus     []struct{ Address, Vendor, Model string }
				Pool     struct{ Name string }
			}
		}
		e.must(e.operator, `mutation($h: ID!) { setHostCapacity(input: {hostId: $h, vcpus: 64, memoryMb: 262144, diskGb: 2000,
			gpus: [{address: "0000:65:00.0", vendor: "NVIDIA", model: "L40S"}, {address: "0000:66:00.0", vendor: "NVIDIA", model: "L40S"}]}) { host { id } } }`,
			map[string]any{"h": created.CreateHost.Host.ID}, nil)
		e.must(e.operator, `{ hosts { name pool { name } capacity { vcpus memoryMb diskGb } gpus { address vendor model } } }`, nil, &out)
		if len(out.Hosts) != 1 || out.Hosts[0].Capacity.Vcpus != 64 || len(out.Hosts[0].Gpus) != 2 || out.Hosts[0].Gpus[1].Model != "L40S" || out.Hosts[0].Pool.Name != "fra1" {
			t.Fatalf("hosts = %+v", out.Hosts)
		}
		r := e.do(e.operator, `mutation($p: ID!) { createHost(input: {poolId: $p, name: "hv-2"}) { credential } }`, map[string]any{"p": e.providerPool("cloud", nil)})
		if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "poolId" {
			t.Fatalf("host in a provider pool: %+v", r.Errors)
		}
		r = e.do(e.operator, `mutation($h: ID!) { setHostCapacity(input: {hostId: $h, vcpus: 1, memoryMb: 1, diskGb: 1, gpus: [{address: "65:00", vendor: "x", model: "y"}]}) { host { id } } }`,
			map[string]any{"h": created.CreateHost.Host.ID})
		if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "gpus[0].address" {
			t.Fatalf("bad PCI address: %+v", r.Errors)
		}

		drain := `mutation($h: ID!, $d: Boolean!) { setHostDraining(input: {hostId: $h, draining: $d}) { host { name draining } } }`
		var drained struct {
			SetHostDraining struct{ Host struct{ Draining bool } }
		}
		e.must(e.operator, drain, map[string]any{"h": created.CreateHost.Host.ID, "d": true}, &drained)
		if !drained.SetHostDraining.Host.Draining || e.count("hosts", "name = 'hv-1' AND draining") != 1 {
			t.Fatalf("not draining: %+v", drained)
		}
		e.must(e.operator, drain, map[string]any{"h": created.CreateHost.Host.ID, "d": false}, &drained)
		if drained.SetHostDraining.Host.Draining || e.count("audit_events", "action = 'host.setDraining' AND outcome = 'success'") != 2 {
			t.Fatalf("still draining, or not audited: %+v", drained)
		}
		if r := e.do(e.operator, drain, map[string]any{"h": "hst_" + strings.Repeat("0", 26), "d": true}); r.code() != "NOT_FOUND" {
			t.Fatalf("an unknown host: %+v", r.Errors)
		}
		if r := e.do(e.world("gamma").member, drain, map[string]any{"h": created.CreateHost.Host.ID, "d": true}); r.code() != "FORBIDDEN" {
			t.Fatalf("a member drains: %+v", r.Errors)
		}

		// The host protocol its daemon speaks: null until it says (the
		// gateway records it from its reports).
		var proto struct {
			Hosts []struct{ ProtocolVersion *int }
		}
		e.must(e.operator, `{ hosts { protocolVersion } }`, nil, &proto)
		if len(proto.Hosts) != 1 || proto.Hosts[0].ProtocolVersion != nil {
			t.Fatalf("protocol before a report: %+v", proto.Hosts)
		}
		if _, err := e.db.Exec(context.Background(), "UPDATE hosts SET protocol = 1 WHERE name = 'hv-1'"); err != nil {
			t.Fatal(err)
		}
		e.must(e.operator, `{ hosts { protocolVersion } }`, nil, &proto)
		if len(proto.Hosts) != 1 || proto.Hosts[0].ProtocolVersion == nil || *proto.Hosts[0].ProtocolVersion != 1 {
			t.Fatalf("protocol of a version 1 host: %+v", proto.Hosts)
		}
	})
	t.Run("GPU flavor and quota view", func(t *testing.T) {
		r := e.do(e.operator, `mutation { createFlavor(input: {name: "gpu-broken", vcpus: 8, memoryMb: 65536, diskGb: 100, gpuCount: 1}) { flavor { id } } }`, nil)
		if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "gpuModel" {
			t.Fatalf("GPU count without a model: %+v", r.Errors)
		}
		e.must(e.operator, `mutation { createFlavor(input: {name: "gpu-l40s", vcpus: 8, memoryMb: 65536, diskGb: 100, gpuModel: "L40S", gpuCount: 1}) { flavor { id } } }`, nil, nil)
		var out struct {
			SetQuota struct {
				Tenant struct {
					Quota struct {
						Instances, Vcpus, MemoryMb, Gpus *int
						Usage                            struct{ Instances int }
					}
				}
			}
		}
		e.must(e.operator, `mutation($t: ID!) { setQuota(input: {tenantId: $t, instances: 5, gpus: 2}) { tenant { quota { instances vcpus memoryMb gpus usage { instances } } } } }`,
			map[string]any{"t": tenant}, &out)
		q := out.SetQuota.Tenant.Quota
		if q.Instances == nil || *q.Instances != 5 || q.Gpus == nil || *q.Gpus != 2 || q.Vcpus != nil || q.MemoryMb != nil {
			t.Fatalf("quota = %+v", q)
		}
	})
	t.Run("image validation", func(t *testing.T) {
		for _, bad := range []struct{ url, sha, field string }{
			{"ftp://x/y", sha, "sourceUrl"},
			{"https://x/y", "abc", "sha256"},
		} {
			r := e.do(e.operator, `mutation($u: String!, $s: String!) { registerImage(input: {name: "x", sourceUrl: $u, sha256: $s, format: RAW, visibility: PUBLIC}) { image { id } } }`,
				map[string]any{"u": bad.url, "s": bad.sha})
			if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != bad.field {
				t.Errorf("%+v: %+v", bad, r.Errors)
			}
		}
		r := e.do(e.operator, `mutation { registerImage(input: {name: "x", sourceUrl: "https://x/y", sha256: "`+sha+`", format: RAW, visibility: TENANT}) { image { id } } }`, nil)
		if r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "tenantId" {
			t.Errorf("tenant image without a tenant: %+v", r.Errors)
		}
		var out struct {
			RegisterImage struct {
				Image struct{ Format, Visibility, Sha256 string }
			}
		}
		e.must(e.operator, `mutation { registerImage(input: {name: "debian", sourceUrl: "file:///var/lib/images/debian.raw", sha256: "`+strings.ToUpper(sha)+`", format: RAW, visibility: PUBLIC, verified: true}) {
			image { format visibility sha256 } } }`, nil, &out)
		if img := out.RegisterImage.Image; img.Format != "RAW" || img.Visibility != "PUBLIC" || img.Sha256 != sha {
			t.Errorf("image = %+v", img)
		}
	})
	t.Run("every operation is audited", func(t *testing.T) {
		for _, action := range []string{"tenant.create", "apiToken.create", "pool.create", "ipPool.create", "host.create", "host.setCapacity", "flavor.create", "quota.set", "image.register"} {
			if n := e.count("audit_events", "action = $1 AND outcome = 'success'", action); n == 0 {
				t.Errorf("no audit event for %s", action)
			}
		}
	})
}

func TestPaging(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	const total = 25
	for i := range total {
		in := w.input(fmt.Sprintf("vm-%02d", i))
		if i%5 == 0 {
			in["desiredState"] = "STOPPED"
		}
		e.must(w.member, createInstance, map[string]any{"in": in}, nil)
	}
	query := `query($after: String, $f: InstanceFilter) { instances(first: 10, after: $after, filter: $f) {
		totalCount pageInfo { hasNextPage endCursor } edges { cursor node { id name } } } }`
	type page struct {
		Instances struct {
			TotalCount int
			PageInfo   struct {
				HasNextPage bool
				EndCursor   *string
			}
			Edges []struct {
				Cursor string
				Node   struct{ ID, Name string }
			}
		}
	}
	seen := map[string]bool{}
	var after *string
	var pages int
	for {
		var p page
		e.must(w.member, query, map[string]any{"after": after}, &p)
		pages++
		if p.Instances.TotalCount != total {
			t.Fatalf("totalCount = %d", p.Instances.TotalCount)
		}
		for _, edge := range p.Instances.Edges {
			if seen[edge.Node.ID] {
				t.Fatalf("%s seen twice", edge.Node.Name)
			}
			seen[edge.Node.ID] = true
		}
		if !p.Instances.PageInfo.HasNextPage {
			break
		}
		after = p.Instances.PageInfo.EndCursor
	}
	if len(seen) != total || pages != 3 {
		t.Fatalf("saw %d instances in %d pages", len(seen), pages)
	}

	t.Run("filters", func(t *testing.T) {
		var p page
		e.must(w.member, query, map[string]any{"f": map[string]any{"desiredState": "STOPPED", "poolId": w.pool}}, &p)
		if p.Instances.TotalCount != 5 || len(p.Instances.Edges) != 5 {
			t.Fatalf("stopped = %d", p.Instances.TotalCount)
		}
		e.must(w.member, query, map[string]any{"f": map[string]any{"name": "vm-07"}}, &p)
		if p.Instances.TotalCount != 1 || p.Instances.Edges[0].Node.Name != "vm-07" {
			t.Fatalf("by name = %+v", p.Instances)
		}
		if _, err := e.db.Exec(context.Background(), "UPDATE instances SET state = 'DELETED' WHERE name IN ('vm-01', 'vm-02')"); err != nil {
			t.Fatal(err)
		}
		e.must(w.member, query, map[string]any{"f": map[string]any{"excludeDeleted": true}}, &p)
		if p.Instances.TotalCount != total-2 || len(p.Instances.Edges) != 10 {
			t.Fatalf("without the deleted: %d", p.Instances.TotalCount)
		}
		e.must(w.member, query, map[string]any{"f": map[string]any{"excludeDeleted": false}}, &p)
		if p.Instances.TotalCount != total {
			t.Fatalf("with the deleted: %d", p.Instances.TotalCount)
		}
	})
	t.Run("first is at most 100", func(t *testing.T) {
		if r := e.do(w.member, `{ instances(first: 101) { totalCount } }`, nil); r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "first" {
			t.Fatalf("errors = %+v", r.Errors)
		}
	})
	t.Run("audit events page too", func(t *testing.T) {
		var out struct {
			AuditEvents struct {
				TotalCount int
				PageInfo   struct{ EndCursor string }
				Nodes      []struct{ Action, Outcome, RequestID string }
			}
		}
		e.must(w.member, `{ auditEvents(first: 5, filter: {action: "instance.create"}) { totalCount pageInfo { endCursor } nodes { action outcome requestId } } }`, nil, &out)
		if out.AuditEvents.TotalCount != total || len(out.AuditEvents.Nodes) != 5 || out.AuditEvents.Nodes[0].RequestID != "req-test" {
			t.Fatalf("audit = %+v", out.AuditEvents)
		}
		var next struct {
			AuditEvents struct{ Nodes []struct{ ID string } }
		}
		e.must(w.member, `query($a: String) { auditEvents(first: 100, after: $a, filter: {action: "instance.create"}) { nodes { id } } }`,
			map[string]any{"a": out.AuditEvents.PageInfo.EndCursor}, &next)
		if len(next.AuditEvents.Nodes) != total-5 {
			t.Fatalf("second page has %d", len(next.AuditEvents.Nodes))
		}
	})
}

func TestUserDataIsSealed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	const secret = "#cloud-config\nwrite_files: [{path: /etc/secret, content: hunter2}]\n"
	in := w.input("sealed")
	in["userData"] = secret
	id := e.id(w.member, createInstance, map[string]any{"in": in}, "createInstance", "instance", "id")

	var sealed []byte
	if err := e.db.QueryRow(context.Background(), "SELECT user_data_sealed FROM instances").Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), "hunter2") {
		t.Fatal("user data is stored in the clear")
	}
	uid, _ := ids.Decode(ids.Instance, id)
	plain, err := e.sealer.Open(sealed, uid[:])
	if err != nil || string(plain) != secret {
		t.Fatalf("Open = %q, %v", plain, err)
	}
	if n := e.count("audit_events", "details::text LIKE '%hunter2%'"); n != 0 {
		t.Fatal("user data is in the audit trail")
	}
	var schema struct {
		Type struct{ Fields []struct{ Name string } } `json:"__type"`
	}
	e.must(w.member, `{ __type(name: "Instance") { fields { name } } }`, nil, &schema)
	for _, f := range schema.Type.Fields {
		if strings.Contains(strings.ToLower(f.Name), "userdata") {
			t.Fatalf("Instance exposes %s", f.Name)
		}
	}
}
