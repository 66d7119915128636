package graph_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestCreateInstance(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.world("alpha")
	b := e.world("beta")

	t.Run("admits a valid instance as desired state", func(t *testing.T) {
		in := a.input("web-1")
		in["userData"] = "#cloud-config\n"
		var out struct {
			CreateInstance struct {
				Instance struct {
					ID, Name, State, DesiredState string
					Version                       int
					ImageVerified                 bool
				}
			}
		}
		e.must(a.member, createInstance, map[string]any{"in": in}, &out)
		inst := out.CreateInstance.Instance
		if !strings.HasPrefix(inst.ID, "ins_") || inst.State != "PENDING" || inst.DesiredState != "RUNNING" || inst.Version != 1 || !inst.ImageVerified {
			t.Fatalf("instance = %+v", inst)
		}
		if n := e.count("outbox", "topic = 'vps.instances'"); n != 1 {
			t.Fatalf("outbox rows = %d, want 1", n)
		}
		if n := e.count("audit_events", "action = 'instance.create' AND outcome = 'success' AND request_id = 'req-test'"); n != 1 {
			t.Fatalf("audit rows = %d, want 1", n)
		}
	})

	huge := strings.Repeat("x", 64<<10+1)
	cases := []struct {
		name  string
		token string
		edit  func(in map[string]any)
		code  string
		field string
	}{
		{"unknown pool", a.member, func(in map[string]any) { in["poolId"] = "pool_" + strings.Repeat("0", 26) }, "NOT_FOUND", "poolId"},
		{"another tenant's pool", a.member, func(in map[string]any) { in["poolId"] = b.pool }, "NOT_FOUND", "poolId"},
		{"malformed pool id", a.member, func(in map[string]any) { in["poolId"] = "nope" }, "INVALID_INPUT", "poolId"},
		{"pool of another class", a.member, func(in map[string]any) { in["poolId"] = e.pool("alpha-containers", "container", a.tenant) }, "INVALID_INPUT", "poolId"},
		{"unknown flavor", a.member, func(in map[string]any) { in["flavorId"] = "flv_" + strings.Repeat("1", 25) + "0" }, "NOT_FOUND", "flavorId"},
		{"invisible image", a.member, func(in map[string]any) { in["imageId"] = b.image }, "NOT_FOUND", "imageId"},
		{"unverified image in a verified-only pool", a.member, func(in map[string]any) {
			in["imageId"] = e.image("alpha-unverified", "TENANT", a.tenant, false)
			in["poolId"] = e.id(e.operator, `mutation($t: ID) { createPool(input: {name: "alpha-strict", class: "vps-host", tenantId: $t, requireVerifiedImage: true}) { pool { id } } }`,
				map[string]any{"t": a.tenant}, "createPool", "pool", "id")
		}, "INVALID_INPUT", "imageId"},
		{"bad SSH key", a.member, func(in map[string]any) { in["sshKeys"] = []string{testKey, "ssh-rsa not-a-key"} }, "INVALID_INPUT", "sshKeys[1]"},
		{"no SSH key", a.member, func(in map[string]any) { in["sshKeys"] = []string{} }, "INVALID_INPUT", "sshKeys"},
		{"oversized user data", a.member, func(in map[string]any) { in["userData"] = huge }, "INVALID_INPUT", "userData"},
		{"bad name", a.member, func(in map[string]any) { in["name"] = "Web_1" }, "INVALID_INPUT", "name"},
		{"desired state DELETED", a.member, func(in map[string]any) { in["desiredState"] = "DELETED" }, "INVALID_INPUT", "desiredState"},
		{"taken name", a.member, func(in map[string]any) { in["name"] = "web-1" }, "CONFLICT", "name"},
		{"another tenant named", a.member, func(in map[string]any) { in["tenantId"] = b.tenant }, "NOT_FOUND", "tenantId"},
		{"operator without a tenant", e.operator, func(in map[string]any) {}, "INVALID_INPUT", "tenantId"},
		{"over quota", a.member, func(in map[string]any) {
			e.must(e.operator, `mutation($t: ID!) { setQuota(input: {tenantId: $t, instances: 1}) { tenant { id } } }`, map[string]any{"t": a.tenant}, nil)
		}, "QUOTA_EXCEEDED", ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := a.input(fmt.Sprintf("bad-%d", i))
			c.edit(in)
			instances, outbox := e.count("instances", "true"), e.count("outbox", "true")
			failures := e.count("audit_events", "outcome = 'failure'")
			successes := e.count("audit_events", "outcome = 'success'")

			r := e.do(c.token, createInstance, map[string]any{"in": in})
			if r.code() != c.code || r.Errors[0].Extensions.Field != c.field {
				t.Fatalf("errors = %+v, want code %s field %q", r.Errors, c.code, c.field)
			}
			if got := e.count("instances", "true"); got != instances {
				t.Errorf("instances %d → %d", instances, got)
			}
			if got := e.count("outbox", "true"); got != outbox {
				t.Errorf("outbox rows %d → %d", outbox, got)
			}
			if got := e.count("audit_events", "outcome = 'success'"); got != successes {
				t.Errorf("successful audit rows %d → %d", successes, got)
			}
			if got := e.count("audit_events", "outcome = 'failure' AND action = 'instance.create' AND error_code = $1", c.code); got == 0 {
				t.Errorf("no failed-attempt audit row with code %s", c.code)
			}
			if got := e.count("audit_events", "outcome = 'failure'"); got != failures+1 {
				t.Errorf("failure audit rows %d → %d, want one more", failures, got)
			}
		})
	}

	t.Run("quota error names the limit", func(t *testing.T) {
		r := e.do(a.member, createInstance, map[string]any{"in": a.input("one-more")})
		if r.code() != "QUOTA_EXCEEDED" || r.Errors[0].Extensions.Limit != "instances" {
			t.Fatalf("errors = %+v", r.Errors)
		}
	})
}

func TestQuotaUnderConcurrency(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("busy")
	e.must(e.operator, `mutation($t: ID!) { setQuota(input: {tenantId: $t, instances: 10}) { tenant { id } } }`, map[string]any{"t": w.tenant}, nil)

	const calls = 50
	codes := make([]string, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			codes[i] = e.do(w.member, createInstance, map[string]any{"in": w.input(fmt.Sprintf("vm-%d", i))}).code()
		})
	}
	wg.Wait()
	tally := map[string]int{}
	for _, c := range codes {
		tally[c]++
	}
	if tally[""] != 10 || tally["QUOTA_EXCEEDED"] != 40 || len(tally) != 2 {
		t.Fatalf("outcomes = %v, want 10 created and 40 QUOTA_EXCEEDED", tally)
	}
	if n := e.count("instances", "true"); n != 10 {
		t.Fatalf("instances = %d, want 10", n)
	}
	// The audit row is written before the quota's check: a refusal rolls
	// it back and records the failure instead.
	for outcome, want := range map[string]int{"success": 10, "failure": 40} {
		if n := e.count("audit_events", "action = 'instance.create' AND outcome = $1", outcome); n != want {
			t.Errorf("%d creates audited as %s, want %d", n, outcome, want)
		}
	}

	t.Run("every limit is enforced", func(t *testing.T) {
		for _, limit := range []string{"vcpus", "memoryMb"} {
			x := e.world("limit-" + strings.ToLower(limit))
			e.must(e.operator, fmt.Sprintf(`mutation($t: ID!) { setQuota(input: {tenantId: $t, %s: 1500}) { tenant { id } } }`, limit), map[string]any{"t": x.tenant}, nil)
			big := e.flavor("big-"+strings.ToLower(limit), 1000, 1000)
			in := x.input("first")
			in["flavorId"] = big
			e.must(x.member, createInstance, map[string]any{"in": in}, nil)
			in["name"] = "second"
			if r := e.do(x.member, createInstance, map[string]any{"in": in}); r.code() != "QUOTA_EXCEEDED" || r.Errors[0].Extensions.Limit != limit {
				t.Errorf("%s: errors = %+v", limit, r.Errors)
			}
		}
	})
}

// TestNameUnderConcurrency races creates of one name in one tenant: the
// unique index, not a check under the tenant's lock, admits exactly one, and
// the others are told the name is taken.
func TestNameUnderConcurrency(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("namesake")

	const calls = 10
	errs := make([]string, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			r := e.do(w.member, createInstance, map[string]any{"in": w.input("same")})
			if len(r.Errors) > 0 {
				errs[i] = r.code() + " " + r.Errors[0].Extensions.Field
			}
		})
	}
	wg.Wait()
	tally := map[string]int{}
	for _, c := range errs {
		tally[c]++
	}
	if tally[""] != 1 || tally["CONFLICT name"] != calls-1 || len(tally) != 2 {
		t.Fatalf("outcomes = %v, want 1 created and %d CONFLICT on name", tally, calls-1)
	}
	if n := e.count("instances", "name = 'same'"); n != 1 {
		t.Fatalf("instances named same = %d, want 1", n)
	}
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.world("alpha")
	b := e.world("beta")
	in := a.input("once")
	in["idempotencyKey"] = "req-42"
	first := e.id(a.member, createInstance, map[string]any{"in": in}, "createInstance", "instance", "id")
	in["name"] = "twice" // a retry that differs still returns the first result
	second := e.id(a.member, createInstance, map[string]any{"in": in}, "createInstance", "instance", "id")
	if first != second {
		t.Fatalf("second create returned %s, want %s", second, first)
	}
	if n := e.count("instances", "true"); n != 1 {
		t.Fatalf("instances = %d, want 1", n)
	}
	if n := e.count("outbox", "true"); n != 1 {
		t.Fatalf("outbox rows = %d, want 1", n)
	}

	t.Run("concurrent repeats make one instance", func(t *testing.T) {
		var wg sync.WaitGroup
		got := make([]string, 10)
		for i := range got {
			wg.Go(func() {
				in := a.input("racer")
				in["idempotencyKey"] = "race"
				got[i] = e.id(a.member, createInstance, map[string]any{"in": in}, "createInstance", "instance", "id")
			})
		}
		wg.Wait()
		for _, id := range got {
			if id != got[0] {
				t.Fatalf("ids differ: %v", got)
			}
		}
	})
	t.Run("keys are per tenant", func(t *testing.T) {
		in := b.input("once")
		in["idempotencyKey"] = "req-42"
		if id := e.id(b.member, createInstance, map[string]any{"in": in}, "createInstance", "instance", "id"); id == first {
			t.Fatal("another tenant's key returned the first tenant's instance")
		}
	})
}

// TestTenantUsageFollowsInstances: tenant_usage, which admission reads under
// the tenant's lock, is what the tenant's live instances sum to after
// creates, refused creates, deletes, a resize, a racing pair of creates and
// a delete, and the tenant's deletion; the usage the API shows is the same.
func TestTenantUsageFollowsInstances(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.world("counted")
	b := e.world("other")
	big := e.flavor("counted-big", 4, 8192)
	check := func(t *testing.T) {
		t.Helper()
		var wrong int
		if err := e.db.QueryRow(context.Background(), "SELECT count(*) FROM ("+usageMismatches+") m").Scan(&wrong); err != nil {
			t.Fatalf("recount: %v", err)
		}
		if wrong != 0 {
			t.Fatalf("%d tenants' tenant_usage rows differ from a recount of their live instances", wrong)
		}
		var out struct {
			Node struct {
				Quota struct {
					Usage struct{ Instances, Vcpus int }
				}
			}
		}
		e.must(e.operator, `query($t: ID!) { node(id: $t) { ... on Tenant { quota { usage { instances vcpus } } } } }`, map[string]any{"t": a.tenant}, &out)
		live, vcpus := 0, 0
		if err := e.db.QueryRow(context.Background(), `SELECT count(*), coalesce(sum(vcpus), 0) FROM instances
			WHERE tenant_id = (SELECT tenant_id FROM instances WHERE name = 'c-0') AND state <> 'DELETED'`).Scan(&live, &vcpus); err != nil {
			t.Fatalf("count live: %v", err)
		}
		if got := out.Node.Quota.Usage; got.Instances != live || got.Vcpus != vcpus {
			t.Fatalf("usage shown = %+v, want %d instances and %d vCPUs", got, live, vcpus)
		}
	}
	create := func(w world, name, flavor string) response {
		in := w.input(name)
		if flavor != "" {
			in["flavorId"] = flavor
		}
		return e.do(w.member, createInstance, map[string]any{"in": in})
	}
	exec := func(t *testing.T, sql string, args ...any) {
		t.Helper()
		if _, err := e.db.Exec(context.Background(), sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	t.Run("creates", func(t *testing.T) {
		for i := range 4 {
			flavor := ""
			if i%2 == 1 {
				flavor = big
			}
			if r := create(a, fmt.Sprintf("c-%d", i), flavor); len(r.Errors) > 0 {
				t.Fatalf("create c-%d: %+v", i, r.Errors)
			}
		}
		if r := create(b, "b-0", ""); len(r.Errors) > 0 {
			t.Fatalf("create b-0: %+v", r.Errors)
		}
		check(t)
	})
	t.Run("refused creates", func(t *testing.T) {
		e.must(e.operator, `mutation($t: ID!) { setQuota(input: {tenantId: $t, instances: 5}) { tenant { id } } }`, map[string]any{"t": a.tenant}, nil)
		if r := create(a, "c-0", ""); r.code() != "CONFLICT" {
			t.Fatalf("taken name: %+v", r.Errors)
		}
		if r := create(a, "c-4", ""); len(r.Errors) > 0 {
			t.Fatalf("create c-4: %+v", r.Errors)
		}
		if r := create(a, "c-5", ""); r.code() != "QUOTA_EXCEEDED" {
			t.Fatalf("over quota: %+v", r.Errors)
		}
		check(t)
	})
	t.Run("deletes and a resize", func(t *testing.T) {
		exec(t, "UPDATE instances SET state = 'DELETED' WHERE name IN ('c-1', 'c-2')")
		exec(t, "UPDATE instances SET state = 'DELETED' WHERE name = 'c-1'") // again: nothing changes
		exec(t, "UPDATE instances SET vcpus = vcpus + 2, memory_mb = memory_mb * 2 WHERE name = 'c-3'")
		exec(t, "UPDATE instances SET state = 'RUNNING' WHERE name = 'c-0'")
		check(t)
	})
	t.Run("a racing pair and a delete", func(t *testing.T) {
		codes := make([]string, 2)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Go(func() { codes[i] = create(a, fmt.Sprintf("race-%d", i), "").code() })
		}
		wg.Go(func() {
			if _, err := e.db.Exec(context.Background(), "UPDATE instances SET state = 'DELETED' WHERE name = 'c-4'"); err != nil {
				t.Errorf("delete c-4: %v", err)
			}
		})
		wg.Wait()
		check(t)
		if live := e.count("instances", "name LIKE 'race-%' AND state <> 'DELETED'"); live == 0 {
			t.Fatalf("neither racing create was admitted (%v), with room for two", codes)
		}
	})
	t.Run("tenant deleted", func(t *testing.T) {
		e.must(e.operator, `mutation($t: ID!) { deleteTenant(input: {id: $t}) { tenant { id } } }`, map[string]any{"t": b.tenant}, nil)
		exec(t, "UPDATE instances SET state = 'DELETED' WHERE name = 'b-0'")
		check(t)
		if n := e.count("tenant_usage u JOIN instances i USING (tenant_id)", "i.name = 'b-0' AND u.instances <> 0"); n != 0 {
			t.Fatalf("the deleted tenant's usage row holds instances")
		}
	})
}

// usageMismatches lists the tenants whose tenant_usage row is not what their
// live instances sum to (a row of zeros for none).
const usageMismatches = `SELECT coalesce(c.tenant_id, u.tenant_id)
FROM (SELECT tenant_id, count(*)::int AS instances, sum(vcpus)::int AS vcpus, sum(memory_mb)::bigint AS memory_mb, sum(gpu_count)::int AS gpus
      FROM instances WHERE state <> 'DELETED' GROUP BY tenant_id) c
FULL JOIN (SELECT * FROM tenant_usage WHERE instances <> 0 OR vcpus <> 0 OR memory_mb <> 0 OR gpus <> 0) u USING (tenant_id)
WHERE c.instances IS DISTINCT FROM u.instances OR c.vcpus IS DISTINCT FROM u.vcpus
   OR c.memory_mb IS DISTINCT FROM u.memory_mb OR c.gpus IS DISTINCT FROM u.gpus`
