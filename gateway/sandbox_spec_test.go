package gateway_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/ids"
)

// placeOn puts instance id in the host's spec with power, as the
// reconciler would, and returns the spec's generation.
func (e *env) placeOn(id uuid.UUID, power string) int64 {
	e.t.Helper()
	var gen int64
	if err := e.db.QueryRow(context.Background(), "UPDATE hosts SET spec_generation = spec_generation + 1 WHERE id = $1 RETURNING spec_generation", e.host).Scan(&gen); err != nil {
		e.t.Fatal(err)
	}
	e.exec(`UPDATE instances SET host_id = $1, spec_power = $2, spec_generation = $3, state = 'PROVISIONING' WHERE id = $4`, e.host, power, gen, id)
	e.rdb.Publish(context.Background(), e.prefix+events.HostChannel(e.host), "")
	return gen
}

// TestSpecSandbox: an instance made from a sandbox template carries its
// env, opened from its sealed copy, and its network policy in the spec; a
// warm one is held paused. An ordinary instance carries neither.
func TestSpecSandbox(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := iam.WithPrincipal(context.Background(), control.System)
	policy := domain.NetworkPolicy{AllowInternetAccess: false, AllowOut: []string{"10.1.0.1"}, DenyOut: []string{"10.1.0.0/24"}}
	tmpl, err := e.svc.CreateSandboxTemplate(ctx, control.SandboxTemplateInput{TenantID: e.tenant, Name: "py", PoolID: e.pool,
		FlavorID: e.flavor, ImageID: e.image, Env: []control.EnvVar{{Name: "GREETING", Value: "hello"}}, Network: &policy})
	if err != nil {
		t.Fatal(err)
	}
	sbx, err := e.svc.CreateSandbox(ctx, control.CreateSandboxInput{TenantID: e.tenant, TemplateID: tmpl.ID,
		Env: []control.EnvVar{{Name: "OWN", Value: "it's mine"}}})
	if err != nil {
		t.Fatal(err)
	}
	warm, err := e.svc.AddWarmInstance(ctx, tmpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.placeOn(e.instance, "running")
	e.placeOn(sbx.InstanceID, "running")
	gen := e.placeOn(warm.ID, "paused")

	spec, code := e.spec(0, 5) // whole: from version 5 a spec after gen-1 is a delta
	if code != 200 || spec.Generation != gen {
		t.Fatalf("%d %+v", code, spec)
	}
	byID := map[string]hostproto.InstanceSpec{}
	for _, is := range spec.Instances {
		byID[is.ID] = is
	}
	wantPolicy := &hostproto.NetworkPolicy{AllowOut: []string{"10.1.0.1"}, DenyOut: []string{"10.1.0.0/24"}}
	for _, c := range []struct {
		name  string
		id    uuid.UUID
		power hostproto.Power
		env   map[string]string
		pol   *hostproto.NetworkPolicy
	}{
		{"the sandbox's, with its own env over the template's", sbx.InstanceID, hostproto.PowerRunning,
			map[string]string{"GREETING": "hello", "OWN": "it's mine"}, wantPolicy},
		{"the warm one, held paused", warm.ID, hostproto.PowerPaused, map[string]string{"GREETING": "hello"}, wantPolicy},
		{"an ordinary instance", e.instance, hostproto.PowerRunning, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			is, ok := byID[ids.Encode(ids.Instance, c.id)]
			if !ok {
				t.Fatalf("not in the spec: %+v", spec.Instances)
			}
			if is.Power != c.power || !reflect.DeepEqual(is.Env, c.env) || !reflect.DeepEqual(is.NetworkPolicy, c.pol) {
				t.Fatalf("power %s env %v policy %+v; want %s %v %+v", is.Power, is.Env, is.NetworkPolicy, c.power, c.env, c.pol)
			}
		})
	}
}
