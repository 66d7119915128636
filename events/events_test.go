package events_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/better-compute/vps/domain"
	"github.com/better-compute/vps/events"
	"github.com/better-compute/vps/ids"
)

// TestViewRoundTrip: an Instance read back from its event view is the
// Instance the view was made of; a view with an ID of the wrong kind is
// refused.
func TestViewRoundTrip(t *testing.T) {
	host := ids.New()
	now := time.Now().UTC().Truncate(time.Microsecond)
	inst := domain.Instance{
		ID: ids.New(), Name: "web-1", TenantID: ids.New(), PoolID: ids.New(), FlavorID: ids.New(), ImageID: ids.New(),
		ImageVerified: true, SSHKeys: []string{"ssh-ed25519 AAAA a@b"}, DesiredState: "RUNNING", State: "STARTING",
		StateReason: "booting", Addresses: []string{"203.0.113.7", "10.0.0.5"}, HostID: &host,
		HostCertified: true, HostCertValidBefore: &now, CreatedAt: now, UpdatedAt: now, Version: 7,
	}
	for _, in := range []domain.Instance{inst, {ID: ids.New(), TenantID: ids.New(), PoolID: ids.New(), FlavorID: ids.New(), ImageID: ids.New(), Addresses: []string{}}} {
		got, err := events.View(in).Instance()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, in) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, in)
		}
	}

	v := events.View(inst)
	v.PoolID = ids.Encode(ids.Tenant, inst.PoolID)
	if _, err := v.Instance(); err == nil {
		t.Error("a tenant ID as poolId was accepted")
	}
}

// TestSandboxViewRoundTrip: a Sandbox read back from its event view, as
// stored (JSON), is the Sandbox the view was made of, restored from a
// snapshot or not; a view with an ID of the wrong kind is refused.
func TestSandboxViewRoundTrip(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	ended := now.Add(time.Minute)
	snap := ids.New()
	sbx := func(mod func(*domain.Sandbox)) domain.Sandbox {
		s := domain.Sandbox{
			ID: ids.New(), TenantID: ids.New(), TemplateID: ids.New(), TemplateVersion: 3, InstanceID: ids.New(),
			State: "RUNNING", StartedFrom: "COLD", Metadata: map[string]string{"app": "api"},
			ExpiresAt: now.Add(time.Hour), CreatedAt: now, UpdatedAt: now, Version: 4,
		}
		mod(&s)
		return s
	}
	for name, in := range map[string]domain.Sandbox{
		"from its template":  sbx(func(*domain.Sandbox) {}),
		"from a snapshot":    sbx(func(s *domain.Sandbox) { s.FromSnapshot = &snap }),
		"ended, no metadata": sbx(func(s *domain.Sandbox) { s.EndedAt, s.Metadata, s.State = &ended, map[string]string{}, "DELETED" }),
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(events.ViewSandbox(in))
			if err != nil {
				t.Fatal(err)
			}
			var v events.SandboxView
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			got, err := v.Sandbox()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, in) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, in)
			}
		})
	}

	for field, mod := range map[string]func(*events.SandboxView){
		"instanceId":   func(v *events.SandboxView) { v.InstanceID = v.ID },
		"fromSnapshot": func(v *events.SandboxView) { v.FromSnapshot = v.ID },
	} {
		v := events.ViewSandbox(sbx(func(s *domain.Sandbox) { s.FromSnapshot = &snap }))
		mod(&v)
		if _, err := v.Sandbox(); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("a sandbox ID as %s: %v, want it refused", field, err)
		}
	}
}
