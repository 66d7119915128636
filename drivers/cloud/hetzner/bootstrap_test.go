package hetzner

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/drivers/cloud/hetzner/hetznertest"
)

// TestBootstrapMachine: a bootstrap's machine carries its user data and
// the bootstrap label, never the instance label: List and Find leave it
// out (the sweep never sees it), FindBootstrap finds it, Delete removes it.
func TestBootstrapMachine(t *testing.T) {
	e := setup(t, hetznertest.Config{})
	ctx := context.Background()
	id := uuid.NewString()
	srv, err := e.d.Create(ctx, cloud.CreateRequest{BootstrapID: id, Name: "rented-1", ServerType: "cx22", Image: "debian-12",
		UserData: "#cloud-config\n", PowerOn: true})
	if err != nil {
		t.Fatal(err)
	}
	if srv.BootstrapID != id || srv.InstanceID != "" {
		t.Errorf("created %+v", srv)
	}
	views := e.emu.Servers()
	if len(views) != 1 || views[0].Labels[cloud.BootstrapLabel] != id || views[0].Labels[cloud.Label] != "" || views[0].UserData != "#cloud-config\n" {
		t.Fatalf("at the provider: %+v", views)
	}
	if all, err := e.d.List(ctx); err != nil || len(all) != 0 {
		t.Errorf("List = %v, %v; want nothing", all, err)
	}
	if got, err := e.d.Find(ctx, id); err != nil || len(got) != 0 {
		t.Errorf("Find(bootstrap ID) = %v, %v; want nothing", got, err)
	}
	got, err := e.d.FindBootstrap(ctx, id)
	if err != nil || len(got) != 1 || got[0].ID != srv.ID || got[0].BootstrapID != id {
		t.Fatalf("FindBootstrap = %+v, %v", got, err)
	}
	if err := e.d.Delete(ctx, got[0].Ref()); err != nil {
		t.Fatal(err)
	}
	if n := len(e.emu.Servers()); n != 0 {
		t.Errorf("%d servers after Delete", n)
	}
	for _, bad := range []cloud.CreateRequest{
		{BootstrapID: id, InstanceID: id, Name: "x", ServerType: "cx22", Image: "debian-12"},
		{BootstrapID: id, Name: "x", ServerType: "cx22", Image: "debian-12", SeedURL: "http://seed.example/"},
	} {
		if _, err := e.d.Create(ctx, bad); cloud.KindOf(err) != cloud.Invalid {
			t.Errorf("Create(%+v) = %v, want Invalid", bad, err)
		}
	}
}
