package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/better-compute/vps/apierr"
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
	// Shared accounts: the emulators listen on loopback, which the operator
	// allows here.
	make := Drivers(DriverOptions{Endpoints: cloud.Endpoints{AllowPrivate: true}})
	stored := func(settings map[string]any) json.RawMessage {
		b, err := json.Marshal(settings)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name string
		acct cloud.Account
	}{
		{"hetzner", cloud.Account{Shared: true, Provider: "hetzner", Credentials: hetznertest.DefaultToken,
			Settings: stored(map[string]any{"endpoint": hz.URL + "/v1", "location": "fsn1"})}},
		{"proxmox, template as a JSON number", cloud.Account{Shared: true, Provider: "proxmox", Credentials: proxmoxtest.DefaultTokenID + "=" + proxmoxtest.DefaultSecret,
			Settings: stored(map[string]any{"endpoint": px.URL + "/api2/json", "node": "pve", "storage": "local-lvm", "template": float64(9000)})}},
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
	t.Run("settings the API refuses", func(t *testing.T) {
		_, err := make(cloud.Account{Provider: "proxmox", Credentials: proxmoxtest.DefaultTokenID + "=" + proxmoxtest.DefaultSecret,
			Settings: stored(map[string]any{"endpoint": px.URL + "/api2/json", "node": "pve", "storage": "local-lvm"})})
		if err == nil || !strings.Contains(err.Error(), "settings.template") {
			t.Fatalf("made a driver without a template: %v", err)
		}
	})
	t.Run("unknown provider", func(t *testing.T) {
		if _, err := make(cloud.Account{Provider: "aws"}); err == nil {
			t.Fatal("made a driver for aws")
		}
	})
}

// TestProviderSettings: the checks control runs are the drivers', their
// faults INVALID_INPUT on the setting, with the driver's message.
func TestProviderSettings(t *testing.T) {
	checks := ProviderSettings(cloud.Endpoints{Hosts: append(DefaultProviderEndpoints(), "pve:8006")})
	for _, c := range []struct {
		provider, settings, field, message string
	}{
		{"hetzner", `{"location": "fsn1"}`, "", ""},
		{"hetzner", `{"endpoint": "ftp://x"}`, "settings.endpoint", "must be the API URL, such as https://api.hetzner.cloud/v1"},
		{"hetzner", `{"endpoint": "http://169.254.169.254/v1"}`, "settings.endpoint", "169.254.169.254 is not among the provider endpoints this deployment allows; the operator lists them"},
		{"proxmox", `{"endpoint": "https://pve:8006", "node": "n", "storage": "s", "template": 9000}`, "", ""},
		{"proxmox", `{"endpoint": "https://pve:8006", "node": "n", "storage": "s", "template": 5}`, "settings.template", "must be the VMID of the template to clone (100 or more)"},
		{"proxmox", `{"endpoint": "https://pve:8007", "node": "n", "storage": "s", "template": 9000}`, "settings.endpoint", "pve is not among the provider endpoints this deployment allows; the operator lists them"},
	} {
		err := checks[c.provider](json.RawMessage(c.settings), false)
		var e *apierr.Error
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s %s: %v", c.provider, c.settings, err)
		case c.field != "" && (!errors.As(err, &e) || e.Code != apierr.InvalidInput || e.Field != c.field || e.Message != c.message):
			t.Errorf("%s %s: %#v; want INVALID_INPUT on %s: %s", c.provider, c.settings, err, c.field, c.message)
		}
	}
}

// TestDriversRefuseInsideEndpoints: by default a tenant's account reaches
// no emulator on this machine, by address or by a name resolving to
// loopback: its driver is refused (Refused) and no request arrives.
func TestDriversRefuseInsideEndpoints(t *testing.T) {
	t.Parallel()
	hz := hetznertest.New(hetznertest.Config{})
	srv := httptest.NewServer(hz.Handler())
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	make := Drivers(DriverOptions{})
	for _, host := range []string{"127.0.0.1", "localhost"} {
		acct := cloud.Account{Provider: "hetzner", Credentials: hetznertest.DefaultToken,
			Settings: json.RawMessage(`{"endpoint": "http://` + host + `:` + port + `/v1"}`)}
		d, err := make(acct)
		if err == nil {
			_, err = d.List(context.Background())
		}
		if cloud.KindOf(err) != cloud.Refused {
			t.Errorf("%s: %v; want it refused", host, err)
		}
	}
	if total, _ := hz.Faults().Total(); total != 0 {
		t.Fatalf("%d requests reached the emulator", total)
	}
}
