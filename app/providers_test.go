package app

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/better-compute/vps/drivers/cloud"
	hetznerem "github.com/better-compute/vps/emulator/hetzner"
	proxmoxem "github.com/better-compute/vps/emulator/proxmox"
)

// TestDrivers: an account's settings, as the API stores them, make a driver
// that reaches its provider.
func TestDrivers(t *testing.T) {
	hz := httptest.NewServer(hetznerem.New(hetznerem.Config{}).Handler())
	t.Cleanup(hz.Close)
	px := httptest.NewServer(proxmoxem.New(proxmoxem.Config{}).Handler())
	t.Cleanup(px.Close)
	make := Drivers(DriverOptions{})
	cases := []struct {
		name string
		acct cloud.Account
	}{
		{"hetzner", cloud.Account{Provider: "hetzner", Credentials: hetznerem.DefaultToken,
			Settings: map[string]any{"endpoint": hz.URL + "/v1", "location": "fsn1"}}},
		{"proxmox, template as a JSON number", cloud.Account{Provider: "proxmox", Credentials: proxmoxem.DefaultTokenID + "=" + proxmoxem.DefaultSecret,
			Settings: map[string]any{"endpoint": px.URL + "/api2/json", "node": "pve", "storage": "local-lvm", "template": float64(9000)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := make(c.acct)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.List(context.Background()); err != nil {
				t.Fatalf("List: %v", err)
			}
		})
	}
	t.Run("unknown provider", func(t *testing.T) {
		if _, err := make(cloud.Account{Provider: "aws"}); err == nil {
			t.Fatal("made a driver for aws")
		}
	})
}
