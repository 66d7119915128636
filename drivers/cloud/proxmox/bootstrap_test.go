package proxmox_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/google/uuid"

	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/drivers/cloud/proxmox"
)

// TestBootstrapMachine: a bootstrap's VM is named bcb-<ID>, tagged with
// the bootstrap tag, sized by its server type, and points cloud-init at
// its NoCloud seed through smbios1; List and Find leave it out (the sweep
// never sees it), FindBootstrap finds it, Delete removes it.
func TestBootstrapMachine(t *testing.T) {
	d, e := setup(t)
	ctx := context.Background()
	id := uuid.NewString()
	const seed = "http://serve.example:8080/host/seed/bcj_token/"
	srv, err := d.Create(ctx, cloud.CreateRequest{BootstrapID: id, Name: "rented-1", ServerType: "4x8192", SeedURL: seed})
	if err != nil {
		t.Fatal(err)
	}
	if srv.BootstrapID != id || srv.InstanceID != "" {
		t.Errorf("created %+v", srv)
	}
	vm, ok := e.VM(atoi(t, srv.ID))
	if !ok || vm.Name != "bcb-"+id || !slices.Contains(vm.Tags, proxmox.BootstrapTag) || slices.Contains(vm.Tags, proxmox.Tag) ||
		vm.Config["cores"] != "4" || vm.Config["memory"] != "8192" {
		t.Fatalf("at the provider: %+v", vm)
	}
	if got, ok := proxmox.SeedFromSMBIOS(vm.Config["smbios1"]); !ok || got != seed {
		t.Errorf("smbios1 %q names seed %q, want %q", vm.Config["smbios1"], got, seed)
	}
	if all, err := d.List(ctx); err != nil || len(all) != 0 {
		t.Errorf("List = %v, %v; want nothing", all, err)
	}
	got, err := d.FindBootstrap(ctx, id)
	if err != nil || len(got) != 1 || got[0].ID != srv.ID || got[0].BootstrapID != id || got[0].Incomplete {
		t.Fatalf("FindBootstrap = %+v, %v", got, err)
	}
	if other, err := d.FindBootstrap(ctx, uuid.NewString()); err != nil || len(other) != 0 {
		t.Errorf("FindBootstrap(another) = %v, %v", other, err)
	}
	// A Ref naming an instance does not reach a bootstrap's VM.
	if err := d.Delete(ctx, cloud.Ref{ID: srv.ID, InstanceID: id}); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.VM(atoi(t, srv.ID)); !ok {
		t.Fatal("deleting by an instance's Ref removed a bootstrap's VM")
	}
	if err := d.Delete(ctx, got[0].Ref()); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.VM(atoi(t, srv.ID)); ok {
		t.Error("the VM is still there after Delete")
	}
	for _, bad := range []cloud.CreateRequest{
		{BootstrapID: id, ServerType: "big", SeedURL: seed},
		{BootstrapID: id, ServerType: "4x8192", UserData: "#cloud-config\n"},
		{BootstrapID: "not-a-uuid", ServerType: "4x8192"},
	} {
		if _, err := d.Create(ctx, bad); cloud.KindOf(err) != cloud.Invalid {
			t.Errorf("Create(%+v) = %v, want Invalid", bad, err)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
