package graph_test

import (
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
