package devenv

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/iam"
	"github.com/better-compute/vps/internal/testenv"
	"github.com/better-compute/vps/seal"
)

// TestListenFallback: an emulator's address that is taken falls back to a
// free port on the same host when it may, and fails otherwise.
func TestListenFallback(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	taken := held.Addr().String()

	if _, err := listen(taken, false); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("listen on a taken address without fallback: %v", err)
	}
	ln, err := listen(taken, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	if ln.Addr().String() == taken || host != "127.0.0.1" {
		t.Fatalf("fell back to %s; want another port of 127.0.0.1 than %s", ln.Addr(), taken)
	}
}

// TestSeedProvidersMoved: a dev whose emulators are elsewhere than an
// earlier dev's (its default ports were taken) points the accounts the
// earlier one made at them, and makes nothing twice.
func TestSeedProvidersMoved(t *testing.T) {
	sealer, _ := seal.New("test")
	svc := control.New(testenv.DB(t), control.Config{Sealer: sealer})
	ctx := context.Background()
	em := func(hetzner, proxmox string) Emulated {
		return Emulated{HetznerURL: hetzner, HetznerToken: "t", ProxmoxURL: proxmox, ProxmoxToken: "root@pam!t=s", ProxmoxTemplate: 9000}
	}
	if err := SeedProviders(ctx, svc, em("http://127.0.0.1:8091/v1", "http://127.0.0.1:8092/api2/json")); err != nil {
		t.Fatal(err)
	}
	moved := em("http://127.0.0.1:40001/v1", "http://127.0.0.1:40002/api2/json")
	if err := SeedProviders(ctx, svc, moved); err != nil {
		t.Fatal(err)
	}
	ctx = iam.WithPrincipal(ctx, control.System)
	accounts, err := svc.ProviderAccounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"hetzner-emulator": moved.HetznerURL, "proxmox-emulator": moved.ProxmoxURL}
	if len(accounts) != len(want) {
		t.Fatalf("%d accounts, want %d", len(accounts), len(want))
	}
	for _, a := range accounts {
		var settings struct{ Endpoint string }
		json.Unmarshal(a.Settings, &settings)
		if settings.Endpoint != want[a.Name] {
			t.Errorf("%s points at %q, want %q", a.Name, settings.Endpoint, want[a.Name])
		}
	}
	if pools, err := svc.Pools(ctx); err != nil || len(pools) != 2 {
		t.Fatalf("pools: %d, %v", len(pools), err)
	}
}
