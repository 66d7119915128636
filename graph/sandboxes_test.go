package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/testenv"
)

const (
	createTemplate = `mutation($in: CreateSandboxTemplateInput!) { createSandboxTemplate(input: $in) { sandboxTemplate {
		id name public envNames instanceVersion version warmCount defaultTimeout maxTimeout
		network { allowInternetAccess allowOut denyOut } sshKeys { fingerprint } } } }`
	updateTemplate = `mutation($in: UpdateSandboxTemplateInput!) { updateSandboxTemplate(input: $in) { sandboxTemplate {
		id name envNames instanceVersion version warmCount network { allowInternetAccess allowOut denyOut } } } }`
	deleteTemplate = `mutation($id: ID!) { deleteSandboxTemplate(input: {id: $id}) { sandboxTemplate { id } } }`
	createSandbox  = `mutation($in: CreateSandboxInput!) { createSandbox(input: $in) { sandbox {
		id state startedFrom templateVersion expiresAt metadata instance { id desiredState tenant { id } } } } }`
	sandboxFields = `id state startedFrom expiresAt endedAt metadata instance { id desiredState }`
)

// templateView is a SandboxTemplate as the tests read it.
type templateView struct {
	ID, Name                   string
	Public                     bool
	EnvNames                   []string
	InstanceVersion, Version   int
	WarmCount                  int
	DefaultTimeout, MaxTimeout int
	Network                    struct {
		AllowInternetAccess bool
		AllowOut, DenyOut   []string
	}
	SSHKeys []struct{ Fingerprint string }
}

// sandboxView is a Sandbox as the tests read it.
type sandboxView struct {
	ID, State, StartedFrom string
	TemplateVersion        int
	ExpiresAt              time.Time
	EndedAt                *time.Time
	Metadata               map[string]string
	Instance               struct {
		ID, DesiredState string
		Tenant           struct{ ID string }
	}
}

// templateInput returns a valid createSandboxTemplate input in w.
func (w world) templateInput(name string) map[string]any {
	return map[string]any{"name": name, "poolId": w.pool, "flavorId": w.flavor, "imageId": w.image, "sshKeys": []string{testKey}}
}

// template creates a sandbox template in w, input edited by edit.
func (e *env) template(w world, name string, edit func(map[string]any)) templateView {
	e.t.Helper()
	in := w.templateInput(name)
	if edit != nil {
		edit(in)
	}
	var out struct {
		CreateSandboxTemplate struct{ SandboxTemplate templateView }
	}
	e.must(w.member, createTemplate, map[string]any{"in": in}, &out)
	return out.CreateSandboxTemplate.SandboxTemplate
}

// sandbox creates a sandbox as token from the input in.
func (e *env) sandbox(token string, in map[string]any) sandboxView {
	e.t.Helper()
	var out struct{ CreateSandbox struct{ Sandbox sandboxView } }
	e.must(token, createSandbox, map[string]any{"in": in}, &out)
	return out.CreateSandbox.Sandbox
}

// warm adds n warm instances to a template, as the reconciler will.
func (e *env) warm(template string, n int) {
	e.t.Helper()
	id, ok := ids.Decode(ids.SandboxTemplate, template)
	if !ok {
		e.t.Fatalf("not a template ID: %s", template)
	}
	for range n {
		if _, err := e.svc.AddWarmInstance(context.Background(), id); err != nil {
			e.t.Fatalf("AddWarmInstance: %v", err)
		}
	}
}

func TestSandboxTemplateVersions(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	tpl := e.template(w, "py", func(in map[string]any) {
		in["env"] = []map[string]any{{"name": "GREETING", "value": "hello"}, {"name": "API_KEY", "value": "s3cret-value"}}
		in["network"] = map[string]any{"allowInternetAccess": false, "allowOut": []string{"10.0.0.1", "10.1.0.0/16"}}
	})
	if !strings.HasPrefix(tpl.ID, "sbt_") || tpl.InstanceVersion != 1 || tpl.Version != 1 || tpl.Public ||
		strings.Join(tpl.EnvNames, ",") != "API_KEY,GREETING" || tpl.DefaultTimeout != 300 || tpl.MaxTimeout != 3600 ||
		tpl.Network.AllowInternetAccess || strings.Join(tpl.Network.AllowOut, ",") != "10.0.0.1,10.1.0.0/16" || len(tpl.SSHKeys) != 1 {
		t.Fatalf("template = %+v", tpl)
	}
	if n := e.count("sandbox_templates", "position('s3cret-value' in encode(env, 'escape')) > 0"); n != 0 {
		t.Fatal("the env is stored in the clear")
	}

	other := e.flavor("alpha-big", 2, 2048)
	cases := []struct {
		name string
		edit map[string]any
		bump bool
	}{
		{"name", map[string]any{"name": "py2"}, false},
		{"warm count", map[string]any{"warmCount": 2}, false},
		{"timeouts", map[string]any{"defaultTimeout": 60, "maxTimeout": 600}, false},
		{"flavor", map[string]any{"flavorId": other}, true},
		{"image", map[string]any{"imageId": e.image("alpha-other", "TENANT", w.tenant, true)}, true},
		{"keys", map[string]any{"sshKeys": []string{testKey, newKey("second@example")}}, true},
		{"env", map[string]any{"env": []map[string]any{{"name": "GREETING", "value": "bye"}}}, true},
		{"the same env", map[string]any{"env": []map[string]any{{"name": "GREETING", "value": "bye"}}}, false},
		{"network", map[string]any{"network": map[string]any{"allowInternetAccess": true, "denyOut": []string{"192.168.0.0/24"}}}, true},
		{"the same network", map[string]any{"network": map[string]any{"allowInternetAccess": true, "denyOut": []string{"192.168.0.0/24"}}}, false},
	}
	prev := tpl
	for _, c := range cases {
		c.edit["id"] = tpl.ID
		var out struct {
			UpdateSandboxTemplate struct{ SandboxTemplate templateView }
		}
		e.must(w.member, updateTemplate, map[string]any{"in": c.edit}, &out)
		got := out.UpdateSandboxTemplate.SandboxTemplate
		want := prev.InstanceVersion
		if c.bump {
			want++
		}
		if got.InstanceVersion != want || got.Version != prev.Version+1 {
			t.Errorf("%s: instanceVersion %d → %d, version %d → %d; want instanceVersion %d", c.name, prev.InstanceVersion, got.InstanceVersion,
				prev.Version, got.Version, want)
		}
		prev = got
	}
	if strings.Join(prev.EnvNames, ",") != "GREETING" || prev.Name != "py2" || prev.WarmCount != 2 {
		t.Errorf("template after the updates = %+v", prev)
	}
	// Its creation and every change wake its warm pool's upkeep at once.
	key, _ := ids.Decode(ids.SandboxTemplate, tpl.ID)
	if n := e.count("outbox", "topic = 'vps.sandboxes' AND key = $1", key); n != 1+len(cases) {
		t.Errorf("%d wakes of the template's pool, want %d", n, 1+len(cases))
	}

	t.Run("public templates are the operators'", func(t *testing.T) {
		in := w.templateInput("shared")
		in["public"] = true
		if r := e.do(w.member, createTemplate, map[string]any{"in": in}); r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "public" {
			t.Fatalf("errors = %+v", r.Errors)
		}
	})
}

func TestCreateSandboxCold(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	tpl := e.template(w, "py", func(in map[string]any) {
		in["env"] = []map[string]any{{"name": "GREETING", "value": "hello"}}
		in["network"] = map[string]any{"allowInternetAccess": false, "allowOut": []string{"10.0.0.1"}}
	})
	outbox := e.count("outbox", "topic = 'vps.instances'")
	before := time.Now()
	sbx := e.sandbox(w.member, map[string]any{"templateId": tpl.ID, "metadata": map[string]any{"team": "ml"}})
	if !strings.HasPrefix(sbx.ID, "sbx_") || sbx.StartedFrom != "COLD" || sbx.State != "STARTING" || sbx.TemplateVersion != 1 ||
		sbx.Instance.DesiredState != "RUNNING" || sbx.Instance.Tenant.ID != w.tenant || sbx.Metadata["team"] != "ml" {
		t.Fatalf("sandbox = %+v", sbx)
	}
	if d := sbx.ExpiresAt.Sub(before); d < 299*time.Second || d > 302*time.Second {
		t.Errorf("expires %v after the create, want the default 300 s", d)
	}
	if n := e.count("outbox", "topic = 'vps.instances'"); n != outbox+1 {
		t.Errorf("outbox rows %d → %d, want one for the instance", outbox, n)
	}
	if n := e.count("audit_events", "action = 'sandbox.create' AND outcome = 'success'"); n != 1 {
		t.Errorf("audit rows = %d", n)
	}

	// The instance holds its own copy of the env, sealed to it, and the policy.
	inst, _ := ids.Decode(ids.Instance, sbx.Instance.ID)
	var sealed, policy []byte
	var name string
	if err := e.db.QueryRow(context.Background(), "SELECT env_sealed, network_policy, name FROM instances WHERE id = $1", inst).Scan(&sealed, &policy, &name); err != nil {
		t.Fatal(err)
	}
	plain, err := e.sealer.Open(sealed, inst[:])
	if err != nil || string(plain) != `{"GREETING":"hello"}` {
		t.Errorf("the instance's env opens to %q, %v", plain, err)
	}
	var p struct {
		AllowInternetAccess bool
		AllowOut            []string
	}
	if err := json.Unmarshal(policy, &p); err != nil || p.AllowInternetAccess || len(p.AllowOut) != 1 || p.AllowOut[0] != "10.0.0.1" {
		t.Errorf("the instance's network policy is %s", policy)
	}
	if !strings.HasPrefix(name, "sbx-") {
		t.Errorf("the instance is named %s", name)
	}

	t.Run("its instance is changed through it", func(t *testing.T) {
		r := e.do(w.member, `mutation($id: ID!) { stopInstance(input: {id: $id}) { instance { id } } }`, map[string]any{"id": sbx.Instance.ID})
		if r.code() != "FAILED_PRECONDITION" {
			t.Fatalf("errors = %+v", r.Errors)
		}
	})
	t.Run("an idempotency key returns the first sandbox", func(t *testing.T) {
		in := map[string]any{"templateId": tpl.ID, "idempotencyKey": "k1"}
		first, again := e.sandbox(w.member, in), e.sandbox(w.member, in)
		if first.ID != again.ID {
			t.Fatalf("%s, then %s", first.ID, again.ID)
		}
	})
}

// TestWarmClaimBehindAStep: a claim whose only warm instance, ready or still
// converging, is held for a step (the reconciler's or a report's row lock,
// milliseconds) waits for it rather than boot a cold instance for seconds;
// one held by another claim it skips without waiting.
func TestWarmClaimBehindAStep(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	for _, c := range []struct {
		name, template, state, lock, want string
	}{
		{"held for a step", "step", "PAUSED", "FOR NO KEY UPDATE", "WARM"},
		{"converging, held for a step", "starting", "STARTING", "FOR NO KEY UPDATE", "WARM"},
		{"held by another claim", "claim", "PAUSED", "FOR UPDATE", "COLD"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tpl := e.template(w, c.template, func(in map[string]any) { in["warmCount"] = 1 })
			e.warm(tpl.ID, 1)
			tplID, _ := ids.Decode(ids.SandboxTemplate, tpl.ID)
			ctx := context.Background()
			if _, err := e.db.Exec(ctx, "UPDATE instances SET state = $2 WHERE warm_template_id = $1", tplID, c.state); err != nil {
				t.Fatal(err)
			}
			holder, err := e.db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Rollback(ctx)
			if _, err := holder.Exec(ctx, "SELECT id FROM instances WHERE warm_template_id = $1 "+c.lock, tplID); err != nil {
				t.Fatal(err)
			}
			answered := make(chan sandboxView, 1)
			var wg sync.WaitGroup
			defer wg.Wait()
			defer holder.Rollback(ctx) // before the wait: the claim may be waiting on it
			wg.Go(func() {
				var out struct{ CreateSandbox struct{ Sandbox sandboxView } }
				decodeInto(t, e.do(w.member, createSandbox, map[string]any{"in": map[string]any{"templateId": tpl.ID}}).Data, &out)
				answered <- out.CreateSandbox.Sandbox
			})
			var got sandboxView
			if c.want == "COLD" {
				got = <-answered // with the other claim's lock still held
			} else {
				testenv.Eventually(t, 10*time.Second, "the claim to wait for the step", func() bool {
					select {
					case got := <-answered:
						t.Fatalf("answered %s without waiting for the step", got.StartedFrom)
					default:
					}
					var n int
					e.db.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&n)
					return n > 0
				})
				if err := holder.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				got = <-answered
			}
			if got.StartedFrom != c.want {
				t.Fatalf("started %s, want %s", got.StartedFrom, c.want)
			}
		})
	}
}

func TestWarmClaim(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	tpl := e.template(w, "py", func(in map[string]any) { in["warmCount"] = 10 })
	e.warm(tpl.ID, 10)
	tplID, _ := ids.Decode(ids.SandboxTemplate, tpl.ID)
	if n := e.count("instances", "warm_template_id = $1 AND desired_state = 'PAUSED' AND claimed_at IS NULL", tplID); n != 10 {
		t.Fatalf("free warm instances = %d, want 10", n)
	}

	const calls = 50
	got := make([]sandboxView, calls)
	errs := make([]string, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			r := e.do(w.member, createSandbox, map[string]any{"in": map[string]any{"templateId": tpl.ID}})
			if len(r.Errors) > 0 {
				errs[i] = fmt.Sprint(r.Errors)
				return
			}
			var out struct{ CreateSandbox struct{ Sandbox sandboxView } }
			decodeInto(t, r.Data, &out)
			got[i] = out.CreateSandbox.Sandbox
		})
	}
	wg.Wait()
	tally := map[string]int{}
	instances := map[string]bool{}
	for i, s := range got {
		if errs[i] != "" {
			t.Fatalf("create %d: %s", i, errs[i])
		}
		tally[s.StartedFrom]++
		if instances[s.Instance.ID] {
			t.Fatalf("instance %s runs two sandboxes", s.Instance.ID)
		}
		instances[s.Instance.ID] = true
		if s.Instance.DesiredState != "RUNNING" {
			t.Errorf("sandbox %s's instance wants %s", s.ID, s.Instance.DesiredState)
		}
	}
	if tally["WARM"] != 10 || tally["COLD"] != 40 {
		t.Fatalf("started = %v, want 10 WARM and 40 COLD", tally)
	}
	if n := e.count("instances", "warm_template_id = $1 AND claimed_at IS NOT NULL AND sandbox_id IS NOT NULL AND desired_state = 'RUNNING'", tplID); n != 10 {
		t.Errorf("claimed warm instances = %d, want 10", n)
	}
	if n := e.count("instances", "warm_template_id = $1 AND claimed_at IS NULL", tplID); n != 0 {
		t.Errorf("free warm instances = %d, want 0", n)
	}
	if n := e.count("sandboxes s JOIN instances i ON i.sandbox_id = s.id", "s.started_from = 'WARM' AND i.warm_template_id IS NOT NULL"); n != 10 {
		t.Errorf("WARM sandboxes on warm instances = %d, want 10", n)
	}

	t.Run("an older version is never claimed", func(t *testing.T) {
		e.warm(tpl.ID, 2)
		e.must(w.member, updateTemplate, map[string]any{"in": map[string]any{"id": tpl.ID, "env": []map[string]any{{"name": "V", "value": "2"}}}}, nil)
		if s := e.sandbox(w.member, map[string]any{"templateId": tpl.ID}); s.StartedFrom != "COLD" || s.TemplateVersion != 2 {
			t.Fatalf("sandbox = %+v, want COLD of version 2", s)
		}
		e.warm(tpl.ID, 1)
		if s := e.sandbox(w.member, map[string]any{"templateId": tpl.ID}); s.StartedFrom != "WARM" || s.TemplateVersion != 2 {
			t.Fatalf("sandbox = %+v, want WARM of version 2", s)
		}
		if n := e.count("instances", "warm_template_id = $1 AND warm_template_version = 1 AND claimed_at IS NULL", tplID); n != 2 {
			t.Errorf("free warm instances of version 1 = %d, want 2", n)
		}
	})
	t.Run("a sandbox with env of its own boots cold", func(t *testing.T) {
		e.warm(tpl.ID, 1)
		s := e.sandbox(w.member, map[string]any{"templateId": tpl.ID, "env": []map[string]any{{"name": "MINE", "value": "x"}}})
		if s.StartedFrom != "COLD" {
			t.Fatalf("sandbox = %+v", s)
		}
	})
	t.Run("a claim moves the warm instance to the claimer's tenant", func(t *testing.T) {
		o := e.world("omega")
		pub := e.id(e.operator, createTemplate, map[string]any{"in": map[string]any{
			"tenantId": o.tenant, "public": true, "name": "public-py", "poolId": e.pool("shared", "vps-host", nil), "flavorId": o.flavor,
			"imageId": e.image("public-debian", "PUBLIC", nil, true), "warmCount": 1,
		}}, "createSandboxTemplate", "sandboxTemplate", "id")
		e.warm(pub, 1)
		s := e.sandbox(w.member, map[string]any{"templateId": pub})
		if s.StartedFrom != "WARM" || s.Instance.Tenant.ID != w.tenant {
			t.Fatalf("sandbox = %+v, want WARM in %s", s, w.tenant)
		}
	})
}

func TestSandboxTimeouts(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	tpl := e.template(w, "py", func(in map[string]any) { in["defaultTimeout"] = 60; in["maxTimeout"] = 600 })
	setTimeout := `mutation($id: ID!, $s: Int!) { setSandboxTimeout(input: {id: $id, timeout: $s}) { sandbox { ` + sandboxFields + ` } } }`
	pause := `mutation($id: ID!) { pauseSandbox(input: {id: $id}) { sandbox { ` + sandboxFields + ` } } }`
	resume := `mutation($id: ID!) { resumeSandbox(input: {id: $id}) { sandbox { ` + sandboxFields + ` } } }`
	del := `mutation($id: ID!) { deleteSandbox(input: {id: $id}) { sandbox { ` + sandboxFields + ` } } }`
	change := func(t *testing.T, mutation string, vars map[string]any) sandboxView {
		t.Helper()
		var out map[string]struct{ Sandbox sandboxView }
		e.must(w.member, mutation, vars, &out)
		for _, v := range out {
			return v.Sandbox
		}
		t.Fatal("no payload")
		return sandboxView{}
	}

	within := func(t *testing.T, at time.Time, want time.Duration, from time.Time) {
		t.Helper()
		if d := at.Sub(from); d < want-time.Second || d > want+2*time.Second {
			t.Errorf("deadline %v from now, want %v", d, want)
		}
	}
	t.Run("the timeout given, up to the maximum", func(t *testing.T) {
		now := time.Now()
		within(t, e.sandbox(w.member, map[string]any{"templateId": tpl.ID, "timeout": 600}).ExpiresAt, 600*time.Second, now)
		within(t, e.sandbox(w.member, map[string]any{"templateId": tpl.ID}).ExpiresAt, 60*time.Second, now)
	})

	s := e.sandbox(w.member, map[string]any{"templateId": tpl.ID, "timeout": 30})
	t.Run("setSandboxTimeout measures from now, extending or shortening", func(t *testing.T) {
		for _, secs := range []int{500, 10} {
			now := time.Now()
			within(t, change(t, setTimeout, map[string]any{"id": s.ID, "s": secs}).ExpiresAt, time.Duration(secs)*time.Second, now)
		}
		if r := e.do(w.member, setTimeout, map[string]any{"id": s.ID, "s": 601}); r.code() != "INVALID_INPUT" || r.Errors[0].Extensions.Field != "timeout" {
			t.Errorf("over the maximum: %+v", r.Errors)
		}
		if r := e.do(w.member, setTimeout, map[string]any{"id": s.ID, "s": 0}); r.code() != "INVALID_INPUT" {
			t.Errorf("zero: %+v", r.Errors)
		}
	})
	t.Run("pausing keeps the deadline; the clock runs on", func(t *testing.T) {
		before := change(t, setTimeout, map[string]any{"id": s.ID, "s": 300})
		p := change(t, pause, map[string]any{"id": s.ID})
		if p.Instance.DesiredState != "PAUSED" || !p.ExpiresAt.Equal(before.ExpiresAt) {
			t.Fatalf("paused = %+v, deadline was %v", p, before.ExpiresAt)
		}
		if again := change(t, pause, map[string]any{"id": s.ID}); again.Instance.DesiredState != "PAUSED" {
			t.Fatalf("paused again = %+v", again)
		}
		if n := e.count("audit_events", "action = 'sandbox.pause' AND details->>'unchanged' = 'true'"); n != 1 {
			t.Errorf("unchanged pause audit rows = %d", n)
		}
		r := change(t, resume, map[string]any{"id": s.ID})
		if r.Instance.DesiredState != "RUNNING" || !r.ExpiresAt.Equal(before.ExpiresAt) {
			t.Fatalf("resumed = %+v", r)
		}
	})
	t.Run("a deleted sandbox", func(t *testing.T) {
		d := change(t, del, map[string]any{"id": s.ID})
		if d.State != "DELETED" || d.EndedAt == nil || d.Instance.DesiredState != "DELETED" {
			t.Fatalf("deleted = %+v", d)
		}
		for _, m := range []string{pause, resume} {
			if r := e.do(w.member, m, map[string]any{"id": s.ID}); r.code() != "FAILED_PRECONDITION" {
				t.Errorf("errors = %+v", r.Errors)
			}
		}
		if r := e.do(w.member, setTimeout, map[string]any{"id": s.ID, "s": 30}); r.code() != "FAILED_PRECONDITION" {
			t.Errorf("errors = %+v", r.Errors)
		}
		if again := change(t, del, map[string]any{"id": s.ID}); again.State != "DELETED" {
			t.Errorf("deleted again = %+v", again)
		}
	})
}

func TestSandboxBadInput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.world("alpha")
	b := e.world("beta")
	tpl := e.template(a, "py", func(in map[string]any) { in["maxTimeout"] = 600 })
	foreign := e.template(b, "py", nil)
	env := func(n, size int) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			out[i] = map[string]any{"name": fmt.Sprintf("V%d", i), "value": strings.Repeat("x", size)}
		}
		return out
	}
	metadata := func(n, size int) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprintf("k%d", i)] = strings.Repeat("x", size)
		}
		return m
	}
	e.must(e.operator, `mutation($t: ID!) { setQuota(input: {tenantId: $t, instances: 5}) { tenant { id } } }`, map[string]any{"t": a.tenant}, nil)

	cases := []struct {
		name, mutation string
		in             map[string]any
		action, code   string
		field          string
	}{
		{"a provider-pool template", createTemplate, func() map[string]any {
			in := a.templateInput("prov")
			in["poolId"] = e.providerPool("alpha-hetzner", a.tenant)
			return in
		}(), "sandboxTemplate.create", "INVALID_INPUT", "poolId"},
		{"a template in a pool of another class", createTemplate, func() map[string]any {
			in := a.templateInput("ctr")
			in["poolId"] = e.pool("alpha-containers", "container", a.tenant)
			return in
		}(), "sandboxTemplate.create", "INVALID_INPUT", "poolId"},
		{"another tenant's pool", createTemplate, func() map[string]any {
			in := a.templateInput("theirs")
			in["poolId"] = b.pool
			return in
		}(), "sandboxTemplate.create", "NOT_FOUND", "poolId"},
		{"a foreign template", createSandbox, map[string]any{"templateId": foreign.ID}, "sandbox.create", "NOT_FOUND", "templateId"},
		{"a malformed template ID", createSandbox, map[string]any{"templateId": "sbt_nope"}, "sandbox.create", "INVALID_INPUT", "templateId"},
		{"a timeout over the maximum", createSandbox, map[string]any{"templateId": tpl.ID, "timeout": 601}, "sandbox.create", "INVALID_INPUT", "timeout"},
		{"a default timeout over the maximum", createTemplate, func() map[string]any {
			in := a.templateInput("slow")
			in["defaultTimeout"], in["maxTimeout"] = 700, 600
			return in
		}(), "sandboxTemplate.create", "INVALID_INPUT", "defaultTimeout"},
		{"an invalid CIDR", createTemplate, func() map[string]any {
			in := a.templateInput("net")
			in["network"] = map[string]any{"allowOut": []string{"10.0.0.1", "10.0.0.0/8", "10.0.0.0/33"}}
			return in
		}(), "sandboxTemplate.create", "INVALID_INPUT", "network.allowOut[2]"},
		{"an IPv6 address", createTemplate, func() map[string]any {
			in := a.templateInput("net6")
			in["network"] = map[string]any{"denyOut": []string{"::1"}}
			return in
		}(), "sandboxTemplate.create", "INVALID_INPUT", "network.denyOut[0]"},
		{"a CIDR with host bits", createTemplate, func() map[string]any {
			in := a.templateInput("nethost")
			in["network"] = map[string]any{"denyOut": []string{"10.0.0.5/24"}}
			return in
		}(), "sandboxTemplate.create", "INVALID_INPUT", "network.denyOut[0]"},
		{"too many network entries", createTemplate, func() map[string]any {
			in := a.templateInput("netmany")
			many := make([]string, 65)
			for i := range many {
				many[i] = fmt.Sprintf("10.0.%d.1", i)
			}
			in["network"] = map[string]any{"allowOut": many}
			return in
		}(), "sandboxTemplate.create", "INVALID_INPUT", "network.allowOut"},
		{"an env name that is not a variable name", createTemplate, func() map[string]any {
			in := a.templateInput("env")
			in["env"] = []map[string]any{{"name": "OK", "value": "1"}, {"name": "1BAD-NAME", "value": "1"}}
			return in
		}(), "sandboxTemplate.create", "INVALID_INPUT", "env[1].name"},
		{"oversized env", createTemplate, func() map[string]any {
			in := a.templateInput("envbig")
			in["env"] = env(4, 10<<10)
			return in
		}(), "sandboxTemplate.create", "INVALID_INPUT", "env"},
		{"too many env variables", createTemplate, func() map[string]any {
			in := a.templateInput("envmany")
			in["env"] = env(65, 1)
			return in
		}(), "sandboxTemplate.create", "INVALID_INPUT", "env"},
		{"a sandbox's oversized env", createSandbox, map[string]any{"templateId": tpl.ID, "env": env(4, 10<<10)}, "sandbox.create", "INVALID_INPUT", "env"},
		{"oversized metadata", createSandbox, map[string]any{"templateId": tpl.ID, "metadata": metadata(33, 1)}, "sandbox.create", "INVALID_INPUT", "metadata"},
		{"an oversized metadata value", createSandbox, map[string]any{"templateId": tpl.ID, "metadata": metadata(1, 513)}, "sandbox.create", "INVALID_INPUT", "metadata.k0"},
		{"metadata that is not strings", createSandbox, map[string]any{"templateId": tpl.ID, "metadata": map[string]any{"n": 1}}, "sandbox.create", "INVALID_INPUT", "metadata"},
		{"a warm count over quota", createTemplate, func() map[string]any {
			in := a.templateInput("warm")
			in["warmCount"] = 6
			return in
		}(), "sandboxTemplate.create", "QUOTA_EXCEEDED", "warmCount"},
		{"a warm count raised over quota", updateTemplate, map[string]any{"id": tpl.ID, "warmCount": 6}, "sandboxTemplate.update", "QUOTA_EXCEEDED", "warmCount"},
		{"a warm count over the bound", createTemplate, func() map[string]any {
			in := a.templateInput("warmmax")
			in["warmCount"] = 101
			return in
		}(), "sandboxTemplate.create", "INVALID_INPUT", "warmCount"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			counts := func() string {
				return fmt.Sprint(e.count("sandbox_templates", "true"), e.count("sandbox_templates", "version > 1"), e.count("sandboxes", "true"),
					e.count("instances", "true"), e.count("outbox", "true"), e.count("audit_events", "outcome = 'success'"))
			}
			before, failures := counts(), e.count("audit_events", "outcome = 'failure'")
			r := e.do(a.member, c.mutation, map[string]any{"in": c.in})
			if r.code() != c.code || r.Errors[0].Extensions.Field != c.field {
				t.Fatalf("errors = %+v, want code %s field %q", r.Errors, c.code, c.field)
			}
			if after := counts(); after != before {
				t.Errorf("templates, updated templates, sandboxes, instances, outbox rows, successes went from %s to %s", before, after)
			}
			if n := e.count("audit_events", "outcome = 'failure' AND action = $1 AND error_code = $2", c.action, c.code); n == 0 {
				t.Errorf("no failed-attempt audit row %s %s", c.action, c.code)
			}
			if n := e.count("audit_events", "outcome = 'failure'"); n != failures+1 {
				t.Errorf("failure audit rows %d → %d, want one more", failures, n)
			}
		})
	}
}

func TestSandboxesOfAnotherTenant(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.world("alpha")
	b := e.world("beta")
	tpl := e.template(a, "py", nil)
	s := e.sandbox(a.member, map[string]any{"templateId": tpl.ID, "metadata": map[string]any{"team": "ml"}})

	for _, c := range []struct{ name, query string }{
		{"sandbox", `query($id: ID!) { sandbox(id: $id) { id } }`},
		{"node", `query($id: ID!) { node(id: $id) { id } }`},
		{"setSandboxTimeout", `mutation($id: ID!) { setSandboxTimeout(input: {id: $id, timeout: 30}) { sandbox { id } } }`},
		{"pauseSandbox", `mutation($id: ID!) { pauseSandbox(input: {id: $id}) { sandbox { id } } }`},
		{"resumeSandbox", `mutation($id: ID!) { resumeSandbox(input: {id: $id}) { sandbox { id } } }`},
		{"deleteSandbox", `mutation($id: ID!) { deleteSandbox(input: {id: $id}) { sandbox { id } } }`},
		{"its template", `query($id: ID!) { sandboxTemplate(id: $id) { id } }`},
		{"its template as a node", `query($id: ID!) { node(id: $id) { id } }`},
		{"updateSandboxTemplate", `mutation($id: ID!) { updateSandboxTemplate(input: {id: $id, warmCount: 1}) { sandboxTemplate { id } } }`},
		{"deleteSandboxTemplate", deleteTemplate},
		{"its instance", `query($id: ID!) { instance(id: $id) { id } }`},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := s.ID
			switch {
			case strings.Contains(c.name, "template") || strings.Contains(c.query, "Template"):
				id = tpl.ID
			case c.name == "its instance":
				id = s.Instance.ID
			}
			if r := e.do(b.member, c.query, map[string]any{"id": id}); r.code() != "NOT_FOUND" {
				t.Fatalf("errors = %+v, want NOT_FOUND", r.Errors)
			}
		})
	}
	t.Run("lists", func(t *testing.T) {
		var out struct {
			Sandboxes        struct{ TotalCount int }
			SandboxTemplates struct{ TotalCount int }
		}
		e.must(b.member, `{ sandboxes { totalCount } sandboxTemplates { totalCount } }`, nil, &out)
		if out.Sandboxes.TotalCount != 0 || out.SandboxTemplates.TotalCount != 0 {
			t.Fatalf("b sees %+v", out)
		}
		e.must(a.member, `{ sandboxes { totalCount } sandboxTemplates { totalCount } }`, nil, &out)
		if out.Sandboxes.TotalCount != 1 || out.SandboxTemplates.TotalCount != 1 {
			t.Fatalf("a sees %+v", out)
		}
	})
	t.Run("a sandbox of another tenant's template", func(t *testing.T) {
		r := e.do(b.member, createSandbox, map[string]any{"in": map[string]any{"templateId": tpl.ID}})
		if r.code() != "NOT_FOUND" || r.Errors[0].Extensions.Field != "templateId" {
			t.Fatalf("errors = %+v", r.Errors)
		}
	})
}

func TestSandboxList(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	py := e.template(w, "py", nil)
	js := e.template(w, "js", nil)
	for i := range 3 {
		e.sandbox(w.member, map[string]any{"templateId": py.ID, "metadata": map[string]any{"team": "ml", "n": fmt.Sprint(i)}})
	}
	gone := e.sandbox(w.member, map[string]any{"templateId": js.ID, "metadata": map[string]any{"team": "web"}})
	e.must(w.member, `mutation($id: ID!) { deleteSandbox(input: {id: $id}) { sandbox { id } } }`, map[string]any{"id": gone.ID}, nil)

	list := `query($f: SandboxFilter, $first: Int, $after: String) { sandboxes(filter: $f, first: $first, after: $after) {
		totalCount nodes { id template { id } } pageInfo { hasNextPage endCursor } } }`
	for _, c := range []struct {
		name   string
		filter map[string]any
		want   int
	}{
		{"all", nil, 4},
		{"by template", map[string]any{"templateId": py.ID}, 3},
		{"by state", map[string]any{"state": "DELETED"}, 1},
		{"by state STARTING", map[string]any{"state": "STARTING"}, 3},
		{"by metadata", map[string]any{"metadata": map[string]any{"team": "ml"}}, 3},
		{"by two metadata pairs", map[string]any{"metadata": map[string]any{"team": "ml", "n": "1"}}, 1},
		{"by metadata none has", map[string]any{"metadata": map[string]any{"team": "ops"}}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out struct {
				Sandboxes struct {
					TotalCount int
					Nodes      []struct{ ID string }
				}
			}
			e.must(w.member, list, map[string]any{"f": c.filter}, &out)
			if out.Sandboxes.TotalCount != c.want || len(out.Sandboxes.Nodes) != c.want {
				t.Fatalf("got %d (%d nodes), want %d", out.Sandboxes.TotalCount, len(out.Sandboxes.Nodes), c.want)
			}
		})
	}
	t.Run("pages", func(t *testing.T) {
		seen := map[string]bool{}
		var after any
		for {
			var out struct {
				Sandboxes struct {
					Nodes    []struct{ ID string }
					PageInfo struct {
						HasNextPage bool
						EndCursor   string
					}
				}
			}
			e.must(w.member, list, map[string]any{"first": 3, "after": after}, &out)
			for _, n := range out.Sandboxes.Nodes {
				seen[n.ID] = true
			}
			if !out.Sandboxes.PageInfo.HasNextPage {
				break
			}
			after = out.Sandboxes.PageInfo.EndCursor
		}
		if len(seen) != 4 {
			t.Fatalf("paged through %d sandboxes, want 4", len(seen))
		}
	})
}

func TestDeleteSandboxTemplate(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := e.world("alpha")
	tpl := e.template(w, "py", func(in map[string]any) { in["warmCount"] = 2 })
	e.warm(tpl.ID, 2)
	s := e.sandbox(w.member, map[string]any{"templateId": tpl.ID})
	e.warm(tpl.ID, 1)

	r := e.do(w.member, deleteTemplate, map[string]any{"id": tpl.ID})
	if r.code() != "FAILED_PRECONDITION" {
		t.Fatalf("with a live sandbox: errors = %+v", r.Errors)
	}
	e.must(w.member, `mutation($id: ID!) { deleteSandbox(input: {id: $id}) { sandbox { id } } }`, map[string]any{"id": s.ID}, nil)
	e.must(w.member, deleteTemplate, map[string]any{"id": tpl.ID}, nil)
	tplID, _ := ids.Decode(ids.SandboxTemplate, tpl.ID)
	if n := e.count("instances", "warm_template_id = $1 AND claimed_at IS NULL AND desired_state <> 'DELETED'", tplID); n != 0 {
		t.Errorf("%d free warm instances are still wanted", n)
	}
	if r := e.do(w.member, createSandbox, map[string]any{"in": map[string]any{"templateId": tpl.ID}}); r.code() != "NOT_FOUND" {
		t.Errorf("a sandbox of the deleted template: %+v", r.Errors)
	}
	if _, err := e.svc.AddWarmInstance(context.Background(), tplID); err == nil {
		t.Error("a warm instance was added to a deleted template")
	}
}
