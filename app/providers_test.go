package app

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/better-compute/vps/drivers/cloud"
	"github.com/better-compute/vps/drivers/cloud/hetzner/hetznertest"
	"github.com/better-compute/vps/drivers/cloud/proxmox/proxmoxtest"
)

// TestDrivers: an account's settings, as the API stores them, make a driver
// that reaches its provider.
func TestDrivers(t *testing.T) {
	hz := httptest.NewServer(hetznertest.New(hetznertest.Config{}).Handler())
	t.Cleanup(hz.Close)
	px := httptest.NewServer(proxmoxtest.New(proxmoxtest.Config{}).Handler())
	t.Cleanup(px.Close)
	make := Drivers(DriverOptions{})
	cases := []struct {
		name string
		acct cloud.Account
	}{
		{"hetzner", cloud.Account{Provider: "hetzner", Credentials: hetznertest.DefaultToken,
			Settings: map[string]any{"endpoint": hz.URL + "/v1", "location": "fsn1"}}},
		{"proxmox, template as a JSON number", cloud.Account{Provider: "proxmox", Credentials: proxmoxtest.DefaultTokenID + "=" + proxmoxtest.DefaultSecret,
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
