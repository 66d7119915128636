package events_test

import (
	"reflect"
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
		CreatedAt: now, UpdatedAt: now, Version: 7,
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
